// Tokenizer::FromHfFolder: tokenizer.json (HF tokenizers' serialisation: model, added_tokens,
// normalizer, pre_tokenizer, post_processor, decoder) and tokenizer_config.json
// (transformers' PreTrainedTokenizer settings).
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "model/tokenizer/tokenizer.h"
#include "model/tokenizer/unicode_text.h"
#include "model/tokenizer/vocabulary.h"

namespace wb::tokenizer {

namespace {

using nlohmann::json;

constexpr std::string_view kSpaceMark = "\xE2\x96\x81";  // "▁"

Expected<json> ReadJson(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return BadUsage(fmt::format("{}: cannot be opened", path));
  std::ostringstream text;
  text << in.rdbuf();
  json root = json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
  if (root.is_discarded()) return BadData(fmt::format("{}: is not valid JSON", path));
  if (!root.is_object()) return BadData(fmt::format("{}: is not a JSON object", path));
  return root;
}

const json* Member(const json& object, const char* key) {
  if (!object.is_object()) return nullptr;
  auto it = object.find(key);
  return it == object.end() || it->is_null() ? nullptr : &*it;
}

std::string StringMember(const json& object, const char* key) {
  const json* m = Member(object, key);
  return m != nullptr && m->is_string() ? m->get<std::string>() : std::string();
}

// Calls f on a component and, for a "Sequence", on each of its parts (key "pretokenizers",
// "normalizers", "decoders" or "processors").
template <typename F>
void ForEachPart(const json* component, const char* sequenceKey, F f) {
  if (component == nullptr || !component->is_object()) return;
  if (StringMember(*component, "type") == "Sequence") {
    const json* parts = Member(*component, sequenceKey);
    if (parts != nullptr && parts->is_array()) {
      for (const json& part : *parts) f(part);
    }
    return;
  }
  f(*component);
}

bool Mentions(const json* component, const char* sequenceKey, const std::string& type) {
  bool found = false;
  ForEachPart(component, sequenceKey, [&](const json& part) { found = found || StringMember(part, "type") == type; });
  return found;
}

// The byte-level pre-tokenizer a tokenizer.json's pre_tokenizer describes, or an error naming it.
Expected<PreTokenizerKind> ByteLevelPreTokenizer(const std::string& file, const json* pre) {
  if (pre == nullptr) return BadData(fmt::format("{}: byte-level BPE without a pre_tokenizer", file));
  std::vector<const json*> parts;
  ForEachPart(pre, "pretokenizers", [&](const json& part) { parts.push_back(&part); });
  std::vector<std::string> types;
  for (const json* p : parts) types.push_back(StringMember(*p, "type"));
  const auto useRegex = [](const json& byteLevel) {
    const json* r = Member(byteLevel, "use_regex");
    return r == nullptr || !r->is_boolean() || r->get<bool>();  // HF's default is true
  };
  // ByteLevel(use_regex): GPT-2's pattern.
  if (types == std::vector<std::string>{"ByteLevel"} && useRegex(*parts[0])) return PreTokenizerKind::kGpt2;
  // Digits(individual_digits) then ByteLevel(use_regex): SmolLM.
  if (types == std::vector<std::string>{"Digits", "ByteLevel"} && useRegex(*parts[1])) {
    const json* individual = Member(*parts[0], "individual_digits");
    if (individual != nullptr && individual->is_boolean() && individual->get<bool>()) return PreTokenizerKind::kSmolLm;
  }
  // Split(pattern, Isolated) then ByteLevel without its own regex: the pattern decides.
  std::string pattern;
  if (types == std::vector<std::string>{"Split", "ByteLevel"} && !useRegex(*parts[1])) {
    const json* p = Member(*parts[0], "pattern");
    pattern = p != nullptr ? StringMember(*p, "Regex") : "";
    const bool isolated = StringMember(*parts[0], "behavior") == "Isolated";
    const json* invert = Member(*parts[0], "invert");
    const bool inverted = invert != nullptr && invert->is_boolean() && invert->get<bool>();
    if (isolated && !inverted) {
      if (pattern == Gpt2Pattern()) return PreTokenizerKind::kGpt2;
      if (pattern == Llama3Pattern()) return PreTokenizerKind::kLlama3;
      if (pattern == Qwen2Pattern()) return PreTokenizerKind::kQwen2;
    }
  }
  std::string described;
  for (size_t i = 0; i < types.size(); ++i) described += (i ? ", " : "") + (types[i].empty() ? "?" : types[i]);
  return BadData(fmt::format("{}: pre_tokenizer [{}]{} is not one the workbook knows (it knows ByteLevel, "
                             "Digits+ByteLevel, and Split with the GPT-2, Llama 3 or Qwen2 pattern + ByteLevel)",
                             file, described, pattern.empty() ? "" : fmt::format(" with pattern '{}'", pattern)));
}

// A token named in tokenizer_config.json: a string, or an object with "content" (AddedToken).
std::string TokenContent(const json* value) {
  if (value == nullptr) return "";
  if (value->is_string()) return value->get<std::string>();
  return StringMember(*value, "content");
}

// The first and last special tokens of a TemplateProcessing's "single" template: what
// transformers adds around one sequence when the config does not say.
void TemplateEnds(const json* postProcessor, std::string& first, std::string& last) {
  ForEachPart(postProcessor, "processors", [&](const json& part) {
    if (StringMember(part, "type") != "TemplateProcessing") return;
    const json* single = Member(part, "single");
    if (single == nullptr || !single->is_array() || single->empty()) return;
    const auto special = [](const json& item) {
      const json* s = Member(item, "SpecialToken");
      return s != nullptr ? StringMember(*s, "id") : std::string();
    };
    first = special(single->front());
    last = single->size() > 1 ? special(single->back()) : std::string();
  });
}

}  // namespace

Expected<Tokenizer> Tokenizer::FromHfFolder(const std::string& folder) {
  const std::string path = (std::filesystem::path(folder) / "tokenizer.json").string();
  auto root = ReadJson(path);
  if (!root.ok()) return root.error();
  Vocabulary v;
  v.fileName = path;

  const json* model = Member(*root, "model");
  if (model == nullptr || !model->is_object()) return BadData(fmt::format("{}: has no \"model\" object", path));
  const std::string type = StringMember(*model, "type");
  if (type != "BPE") {
    return BadData(fmt::format("{}: model type '{}' is not supported (the workbook reads BPE)", path, type));
  }
  const json* vocab = Member(*model, "vocab");
  if (vocab == nullptr || !vocab->is_object()) return BadData(fmt::format("{}: model.vocab is not an object", path));
  const json* added = Member(*root, "added_tokens");
  if (added != nullptr && !added->is_array()) return BadData(fmt::format("{}: added_tokens is not a list", path));

  // Ids: dense enough that a vector holds them (below the number of entries).
  const size_t entries = vocab->size() + (added != nullptr ? added->size() : 0);
  std::vector<std::string> tokens(entries);
  std::vector<TokenType> types(entries, TokenType::kUnused);
  std::vector<bool> used(entries, false);
  size_t count = 0;
  const auto place = [&](const std::string& text, const json& idValue, TokenType t, bool override) -> Status {
    if (!idValue.is_number_integer()) return BadData(fmt::format("{}: token '{}' has no integer id", path, text));
    const int64_t id = idValue.get<int64_t>();
    if (id < 0 || static_cast<size_t>(id) >= entries) {
      return BadData(fmt::format("{}: token '{}' has id {}; ids must be 0 to {}", path, text, id, entries - 1));
    }
    if (used[id] && !override && tokens[id] != text) {
      return BadData(fmt::format("{}: tokens '{}' and '{}' share id {}", path, tokens[id], text, id));
    }
    tokens[id] = text;
    types[id] = t;
    used[id] = true;
    count = std::max(count, static_cast<size_t>(id) + 1);
    return Status::Ok();
  };
  for (auto it = vocab->begin(); it != vocab->end(); ++it) {
    const TokenType t = ByteOfByteToken(it.key()) >= 0 ? TokenType::kByte : TokenType::kNormal;
    if (Status s = place(it.key(), it.value(), t, false); !s.ok()) return s.error();
  }
  if (added != nullptr) {
    for (const json& a : *added) {
      const json* content = Member(a, "content");
      const json* id = Member(a, "id");
      if (content == nullptr || !content->is_string() || id == nullptr) {
        return BadData(fmt::format("{}: an added_tokens entry lacks \"content\" or \"id\"", path));
      }
      const json* special = Member(a, "special");
      const bool isSpecial = special != nullptr && special->is_boolean() && special->get<bool>();
      if (Status s = place(content->get<std::string>(), *id, isSpecial ? TokenType::kControl : TokenType::kUserDefined,
                           true);
          !s.ok()) {
        return s.error();
      }
    }
  }
  tokens.resize(count);
  types.resize(count);
  v.tokens = std::move(tokens);
  v.types = std::move(types);

  // Merges: "a b" strings (HF tokenizers before 0.20) or ["a", "b"] pairs.
  const json* merges = Member(*model, "merges");
  if (merges != nullptr && !merges->is_array()) return BadData(fmt::format("{}: model.merges is not a list", path));
  if (merges != nullptr) {
    for (size_t i = 0; i < merges->size(); ++i) {
      const json& m = (*merges)[i];
      if (m.is_string()) {
        const std::string s = m.get<std::string>();
        const size_t space = s.size() > 1 ? s.find(' ', 1) : std::string::npos;
        if (space == std::string::npos || space + 1 >= s.size()) {
          return BadData(fmt::format("{}: model.merges[{}] '{}' is not two tokens separated by a space", path, i, s));
        }
        v.mergeList.emplace_back(s.substr(0, space), s.substr(space + 1));
      } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
        v.mergeList.emplace_back(m[0].get<std::string>(), m[1].get<std::string>());
      } else {
        return BadData(fmt::format("{}: model.merges[{}] is neither \"a b\" nor [\"a\", \"b\"]", path, i));
      }
    }
  }

  // Which kind: byte fallback or a "▁" normalizer/pre-tokenizer/decoder is SentencePiece's BPE
  // (Llama 2, Mistral, TinyLlama); a ByteLevel pre-tokenizer or decoder is GPT-2's.
  const json* normalizer = Member(*root, "normalizer");
  const json* pre = Member(*root, "pre_tokenizer");
  const json* decoder = Member(*root, "decoder");
  const json* byteFallback = Member(*model, "byte_fallback");
  const bool fallback = byteFallback != nullptr && byteFallback->is_boolean() && byteFallback->get<bool>();
  bool prepends = false;
  ForEachPart(normalizer, "normalizers", [&](const json& part) {
    prepends = prepends || (StringMember(part, "type") == "Prepend" && StringMember(part, "prepend") == kSpaceMark);
  });
  const bool metaspace = Mentions(pre, "pretokenizers", "Metaspace") || Mentions(decoder, "decoders", "Metaspace");
  const bool byteLevel = Mentions(pre, "pretokenizers", "ByteLevel") || Mentions(decoder, "decoders", "ByteLevel");
  if (fallback || prepends || metaspace || (!byteLevel && Mentions(normalizer, "normalizers", "Replace"))) {
    v.kind = TokenizerKind::kSentencePiece;
    // The dummy prefix: a Prepend("▁") normalizer, or a Metaspace pre-tokenizer unless its
    // prepend_scheme is "never" (or, older, add_prefix_space is false).
    bool prefix = prepends;
    ForEachPart(pre, "pretokenizers", [&](const json& part) {
      if (StringMember(part, "type") != "Metaspace") return;
      const json* addPrefix = Member(part, "add_prefix_space");
      const std::string scheme = StringMember(part, "prepend_scheme");
      prefix = prefix || (scheme.empty() ? addPrefix == nullptr || !addPrefix->is_boolean() || addPrefix->get<bool>()
                                         : scheme != "never");
    });
    v.addSpacePrefix = prefix;
  } else if (byteLevel) {
    v.kind = TokenizerKind::kByteLevelBpe;
    auto kind = ByteLevelPreTokenizer(path, pre);
    if (!kind.ok()) return kind.error();
    v.pre = *kind;
    v.preName = PreTokenizerName(*kind);
    const json* ignore = Member(*model, "ignore_merges");
    v.ignoreMerges = ignore != nullptr && ignore->is_boolean() && ignore->get<bool>();
  } else {
    return BadData(fmt::format("{}: a BPE model with neither byte fallback / Metaspace (SentencePiece) nor a "
                               "ByteLevel pre-tokenizer (GPT-2); the workbook reads only those",
                               path));
  }

  // Finish the vocabulary's lookup first: the names below are looked up in it.
  const auto idOf = [&](const std::string& text) -> std::optional<int32_t> {
    for (size_t i = v.tokens.size(); i-- > 0;) {
      if (v.tokens[i] == text) return static_cast<int32_t>(i);
    }
    return std::nullopt;
  };
  const std::string unk = StringMember(*model, "unk_token");
  if (!unk.empty()) {
    v.unk = idOf(unk);
    if (!v.unk) return BadData(fmt::format("{}: model.unk_token '{}' is not in the vocabulary", path, unk));
    if (v.types[*v.unk] == TokenType::kNormal) v.types[*v.unk] = TokenType::kUnknown;
  }

  // BOS and EOS: tokenizer_config.json, else the post-processor's template.
  std::string templateFirst, templateLast;
  TemplateEnds(Member(*root, "post_processor"), templateFirst, templateLast);
  // Without a template: SentencePiece adds BOS (transformers' LlamaTokenizer default), byte-level BPE not.
  const bool hasTemplate = !templateFirst.empty() || !templateLast.empty();
  v.addBos = hasTemplate ? !templateFirst.empty() : v.kind == TokenizerKind::kSentencePiece;
  v.addEos = !templateLast.empty();
  std::string bosText = templateFirst, eosText = templateLast;
  const std::string configPath = (std::filesystem::path(folder) / "tokenizer_config.json").string();
  std::error_code ec;
  if (std::filesystem::exists(configPath, ec)) {
    auto config = ReadJson(configPath);
    if (!config.ok()) return config.error();
    for (auto [key, text] : {std::pair{"bos_token", &bosText}, std::pair{"eos_token", &eosText}}) {
      const std::string content = TokenContent(Member(*config, key));
      if (!content.empty()) *text = content;
    }
    for (auto [key, flag] : {std::pair{"add_bos_token", &v.addBos}, std::pair{"add_eos_token", &v.addEos}}) {
      const json* value = Member(*config, key);
      if (value != nullptr && !value->is_boolean()) {
        return BadData(fmt::format("{}: {} is not true or false", configPath, key));
      }
      if (value != nullptr) *flag = value->get<bool>();
    }
    const json* chat = Member(*config, "chat_template");
    if (chat != nullptr && chat->is_string()) {
      v.chatTemplate = chat->get<std::string>();
    } else if (chat != nullptr && chat->is_array()) {  // [{"name": ..., "template": ...}]: the default one
      for (const json& named : *chat) {
        if (StringMember(named, "name") == "default") v.chatTemplate = StringMember(named, "template");
      }
    } else if (chat != nullptr) {
      return BadData(fmt::format("{}: chat_template is neither a string nor a list of named templates", configPath));
    }
    for (auto [text, id, what] : {std::tuple{&bosText, &v.bos, "bos_token"}, std::tuple{&eosText, &v.eos, "eos_token"}}) {
      if (text->empty()) continue;
      *id = idOf(*text);
      if (!*id) return BadData(fmt::format("{}: {} '{}' is not in the vocabulary", configPath, what, *text));
    }
  } else {
    if (!bosText.empty()) v.bos = idOf(bosText);
    if (!eosText.empty()) v.eos = idOf(eosText);
  }
  if (v.chatTemplate.empty()) {  // newer transformers write the template to its own file
    const std::string jinja = (std::filesystem::path(folder) / "chat_template.jinja").string();
    if (std::filesystem::exists(jinja, ec)) {
      std::ifstream in(jinja, std::ios::binary);
      std::ostringstream text;
      text << in.rdbuf();
      v.chatTemplate = text.str();
    }
  }

  auto finished = FinishVocabulary(std::move(v));
  if (!finished.ok()) return finished.error();
  return Tokenizer(std::move(*finished));
}

}  // namespace wb::tokenizer
