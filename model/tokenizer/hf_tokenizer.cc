// Tokenizer::FromHfFolder: tokenizer.json (HF tokenizers' serialisation: model, added_tokens,
// normalizer, pre_tokenizer, post_processor, decoder) and tokenizer_config.json
// (transformers' PreTrainedTokenizer settings).
#include <algorithm>
#include <filesystem>
#include <functional>
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

// Where a JSON text is not UTF-8 (RFC 8259 requires it, and nlohmann's parser refuses it):
// the byte, its line, the string it is in and, for a "token": id entry of model.vocab, the id.
std::string DescribeInvalidUtf8(const std::string& text, size_t offset) {
  size_t line = 1, lineStart = 0;
  for (size_t i = 0; i < offset; ++i) {
    if (text[i] == '\n') ++line, lineStart = i + 1;
  }
  size_t open = text.rfind('"', offset);
  while (open != std::string::npos && open > 0 && text[open - 1] == '\\') open = text.rfind('"', open - 1);
  std::string where = fmt::format("byte {} (line {}, column {}) is 0x{:02X}, not UTF-8", offset, line,
                                  offset - lineStart + 1, static_cast<unsigned char>(text[offset]));
  if (open == std::string::npos) return where;
  std::string before = text.substr(open + 1, offset - open - 1);
  for (char& c : before) {
    if (static_cast<unsigned char>(c) >= 0x80) c = '?';
  }
  where += fmt::format(", in the string that begins \"{}\"", before);
  // "text": 123 is a vocabulary entry: name its id, the token's index.
  size_t close = text.find('"', offset);
  if (close != std::string::npos) {
    size_t i = close + 1;
    while (i < text.size() && (text[i] == ' ' || text[i] == '\n' || text[i] == '\r' || text[i] == '\t')) ++i;
    if (i < text.size() && text[i] == ':') {
      ++i;
      while (i < text.size() && (text[i] == ' ' || text[i] == '\n' || text[i] == '\r' || text[i] == '\t')) ++i;
      size_t digits = i;
      while (digits < text.size() && text[digits] >= '0' && text[digits] <= '9') ++digits;
      if (digits > i && digits < text.size() && (text[digits] == ',' || text[digits] == '}' || text[digits] == ' ' ||
                                                 text[digits] == '\n' || text[digits] == '\r')) {
        where += fmt::format(" (the vocabulary token with id {})", text.substr(i, digits - i));
      }
    }
  }
  return where;
}

Expected<json> ReadJson(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return BadUsage(fmt::format("{}: cannot be opened", path));
  std::ostringstream stream;
  stream << in.rdbuf();
  const std::string text = stream.str();
  json root = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (root.is_discarded()) {
    if (auto bad = FirstInvalidUtf8Byte(text)) {
      return BadData(fmt::format("{}: is not valid JSON: {}", path, DescribeInvalidUtf8(text, *bad)));
    }
    return BadData(fmt::format("{}: is not valid JSON", path));
  }
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
      if (pattern == Qwen35Pattern()) return PreTokenizerKind::kQwen35;
      if (pattern == TekkenPattern()) return PreTokenizerKind::kTekken;
    }
  }
  std::string described;
  for (size_t i = 0; i < types.size(); ++i) described += (i ? ", " : "") + (types[i].empty() ? "?" : types[i]);
  return BadData(fmt::format("{}: pre_tokenizer [{}]{} is not one the workbook knows (it knows ByteLevel, "
                             "Digits+ByteLevel, and Split with the GPT-2, Llama 3, Qwen2, Qwen3.5 or Tekken pattern + ByteLevel)",
                             file, described, pattern.empty() ? "" : fmt::format(" with pattern '{}'", pattern)));
}

// A token named in tokenizer_config.json: a string, or an object with "content" (AddedToken).
std::string TokenContent(const json* value) {
  if (value == nullptr) return "";
  if (value->is_string()) return value->get<std::string>();
  return StringMember(*value, "content");
}

// tokenizer.json's normalizer as steps (normalizer.h); a type the workbook does not apply is
// refused by name. Types and fields as HF tokenizers serialises them (normalizers/mod.rs).
Status ReadNormalizers(const std::string& file, const json* component, std::vector<NormalizerStep>& steps) {
  if (component == nullptr) return Status::Ok();
  const std::string type = StringMember(*component, "type");
  const auto flag = [&](const char* key, bool fallback) {
    const json* m = Member(*component, key);
    return m != nullptr && m->is_boolean() ? m->get<bool>() : fallback;
  };
  using Kind = NormalizerStep::Kind;
  NormalizerStep step;
  if (type == "Sequence") {
    const json* parts = Member(*component, "normalizers");
    if (parts == nullptr || !parts->is_array()) {
      return BadData(fmt::format("{}: normalizer Sequence without a \"normalizers\" list", file));
    }
    for (const json& part : *parts) {
      if (Status s = ReadNormalizers(file, &part, steps); !s.ok()) return s;
    }
    return Status::Ok();
  } else if (type == "NFC") {
    step.kind = Kind::kNfc;
  } else if (type == "NFD") {
    step.kind = Kind::kNfd;
  } else if (type == "NFKC") {
    step.kind = Kind::kNfkc;
  } else if (type == "NFKD") {
    step.kind = Kind::kNfkd;
  } else if (type == "Lowercase") {
    step.kind = Kind::kLowercase;
  } else if (type == "Prepend") {
    step.kind = Kind::kPrepend;
    step.content = StringMember(*component, "prepend");
  } else if (type == "Strip") {
    step.kind = Kind::kStrip;
    step.left = flag("strip_left", true);
    step.right = flag("strip_right", true);
  } else if (type == "Replace") {
    step.kind = Kind::kReplace;
    const json* pattern = Member(*component, "pattern");
    const json* content = Member(*component, "content");
    if (pattern == nullptr || Member(*pattern, "String") == nullptr || content == nullptr || !content->is_string()) {
      const std::string regex = pattern != nullptr ? StringMember(*pattern, "Regex") : "";
      return BadData(fmt::format("{}: normalizer Replace{} is not supported (the workbook replaces literal strings)",
                                 file, regex.empty() ? "" : fmt::format(" with the regex pattern '{}'", regex)));
    }
    step.pattern = StringMember(*pattern, "String");
    step.content = content->get<std::string>();
  } else {
    return BadData(fmt::format("{}: normalizer '{}' is not one the workbook applies (it applies NFC, NFD, NFKC, "
                               "NFKD, Lowercase, Replace, Prepend, Strip and Sequence)",
                               file, type.empty() ? "?" : type));
  }
  steps.push_back(step);
  return Status::Ok();
}

// The special tokens a post-processor puts around one sequence (HF tokenizers' PostProcessor
// with add_special_tokens, processors/): TemplateProcessing's "single" template, the "cls"
// and "sep" of RobertaProcessing and BertProcessing, nothing for ByteLevel, each part's in
// order for a Sequence. Another type is refused by name.
struct AddedAround {
  std::vector<int32_t> before, after;
};

Status ReadPostProcessor(const std::string& file, const json* component,
                         const std::function<std::optional<int32_t>(const std::string&)>& idOf, AddedAround& added) {
  if (component == nullptr) return Status::Ok();
  const std::string type = StringMember(*component, "type");
  if (type == "Sequence") {
    const json* parts = Member(*component, "processors");
    if (parts == nullptr || !parts->is_array()) {
      return BadData(fmt::format("{}: post_processor Sequence without a \"processors\" list", file));
    }
    for (const json& part : *parts) {
      if (Status s = ReadPostProcessor(file, &part, idOf, added); !s.ok()) return s;
    }
    return Status::Ok();
  }
  if (type == "ByteLevel") return Status::Ok();  // offsets only
  if (type == "RobertaProcessing" || type == "BertProcessing") {
    // "cls": ["<s>", 0], "sep": ["</s>", 2]: cls $A sep.
    for (auto [key, list] : {std::pair{"cls", &added.before}, std::pair{"sep", &added.after}}) {
      const json* pair = Member(*component, key);
      if (pair == nullptr || !pair->is_array() || pair->size() != 2 || !(*pair)[1].is_number_integer()) {
        return BadData(fmt::format("{}: post_processor {} has no [\"token\", id] \"{}\"", file, type, key));
      }
      list->push_back((*pair)[1].get<int32_t>());
    }
    return Status::Ok();
  }
  if (type != "TemplateProcessing") {
    return BadData(fmt::format("{}: post_processor '{}' is not one the workbook knows (it knows TemplateProcessing, "
                               "ByteLevel, RobertaProcessing, BertProcessing and Sequence)",
                               file, type.empty() ? "?" : type));
  }
  const json* single = Member(*component, "single");
  if (single == nullptr || !single->is_array()) {
    return BadData(fmt::format("{}: post_processor TemplateProcessing has no \"single\" template", file));
  }
  const json* specials = Member(*component, "special_tokens");
  bool seenSequence = false;
  for (const json& item : *single) {
    if (Member(item, "Sequence") != nullptr) {
      seenSequence = true;
      continue;
    }
    const json* special = Member(item, "SpecialToken");
    const std::string name = special != nullptr ? StringMember(*special, "id") : "";
    if (name.empty()) return BadData(fmt::format("{}: a TemplateProcessing item is neither Sequence nor SpecialToken", file));
    // The ids the template inserts: its special_tokens entry, else the token of that text.
    std::vector<int32_t> ids;
    const json* entry = specials != nullptr ? Member(*specials, name.c_str()) : nullptr;
    const json* entryIds = entry != nullptr ? Member(*entry, "ids") : nullptr;
    if (entryIds != nullptr && entryIds->is_array()) {
      for (const json& id : *entryIds) {
        if (!id.is_number_integer()) return BadData(fmt::format("{}: special token '{}' has an id that is not an integer", file, name));
        ids.push_back(id.get<int32_t>());
      }
    } else if (auto id = idOf(name)) {
      ids.push_back(*id);
    } else {
      return BadData(fmt::format("{}: TemplateProcessing's special token '{}' is not in the vocabulary", file, name));
    }
    auto& list = seenSequence ? added.after : added.before;
    list.insert(list.end(), ids.begin(), ids.end());
  }
  return Status::Ok();
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
    if (Status s = place(it.key(), it.value(), TokenType::kNormal, false); !s.ok()) return s.error();
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
  std::vector<NormalizerStep> steps;
  if (Status s = ReadNormalizers(path, normalizer, steps); !s.ok()) return s.error();
  // SentencePiece's own escaping as normalizer steps: Prepend("▁") (the dummy prefix) and
  // Replace(" " -> "▁"); the SentencePiece encoder does both itself (tokenizer.h).
  const auto isPrependMark = [](const NormalizerStep& n) {
    return n.kind == NormalizerStep::Kind::kPrepend && n.content == kSpaceMark;
  };
  const auto isSpaceToMark = [](const NormalizerStep& n) {
    return n.kind == NormalizerStep::Kind::kReplace && n.pattern == " " && n.content == kSpaceMark;
  };
  const bool prepends = std::any_of(steps.begin(), steps.end(), isPrependMark);
  const bool escapesSpaces = std::any_of(steps.begin(), steps.end(), isSpaceToMark);
  const bool metaspace = Mentions(pre, "pretokenizers", "Metaspace") || Mentions(decoder, "decoders", "Metaspace");
  const bool byteLevel = Mentions(pre, "pretokenizers", "ByteLevel") || Mentions(decoder, "decoders", "ByteLevel");
  if (fallback || prepends || metaspace || (!byteLevel && escapesSpaces)) {
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
    for (size_t id = 0; id < v.tokens.size(); ++id) {  // "<0xXX>" is a byte token only here
      if (v.types[id] == TokenType::kNormal && ByteOfByteToken(v.tokens[id]) >= 0) v.types[id] = TokenType::kByte;
    }
    std::erase_if(steps, [&](const NormalizerStep& n) { return isPrependMark(n) || isSpaceToMark(n); });
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
  for (const NormalizerStep& n : steps) v.normalizerText += (v.normalizerText.empty() ? "" : ", ") + DescribeNormalizer(n);
  v.normalizers = std::move(steps);

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
    // The unknown token, listed among the special added tokens too, is typed as SentencePiece
    // and GGUF type it (LLAMA_TOKEN_TYPE_UNKNOWN).
    if (v.types[*v.unk] == TokenType::kNormal || v.types[*v.unk] == TokenType::kControl) {
      v.types[*v.unk] = TokenType::kUnknown;
    }
  }

  // BOS and EOS. The post-processor decides what encoding adds (HF tokenizers applies it with
  // add_special_tokens); tokenizer_config.json's add_bos_token / add_eos_token, where present,
  // override it, as transformers' LlamaTokenizerFast and GemmaTokenizerFast rebuild their
  // template from them (update_post_processor). Without a post-processor nothing is added.
  AddedAround around;
  if (Status s = ReadPostProcessor(path, Member(*root, "post_processor"), idOf, around); !s.ok()) return s.error();
  for (auto [list, where] : {std::pair{&around.before, "before"}, std::pair{&around.after, "after"}}) {
    if (list->size() > 1) {
      return BadData(fmt::format("{}: the post_processor adds {} tokens {} the text; the workbook (like GGUF's "
                                 "add_bos_token / add_eos_token) adds at most one BOS and one EOS",
                                 path, list->size(), where));
    }
    for (int32_t id : *list) {
      if (id < 0 || static_cast<size_t>(id) >= v.tokens.size()) {
        return BadData(fmt::format("{}: the post_processor adds token id {}, outside the vocabulary", path, id));
      }
    }
  }
  // No post-processor at all: a SentencePiece tokenizer adds BOS, the default of transformers'
  // LlamaTokenizer(Fast) (add_bos_token=True), which such files come with.
  const bool noPostProcessor = Member(*root, "post_processor") == nullptr;
  v.addBos = !around.before.empty() || (noPostProcessor && v.kind == TokenizerKind::kSentencePiece);
  v.addEos = !around.after.empty();
  if (!around.before.empty()) v.bos = around.before[0];
  if (!around.after.empty()) v.eos = around.after[0];
  std::string bosText, eosText;
  const std::string configPath = (std::filesystem::path(folder) / "tokenizer_config.json").string();
  std::error_code ec;
  if (std::filesystem::exists(configPath, ec)) {
    auto config = ReadJson(configPath);
    if (!config.ok()) return config.error();
    for (auto [key, text] : {std::pair{"bos_token", &bosText}, std::pair{"eos_token", &eosText}}) {
      *text = TokenContent(Member(*config, key));
    }
    if (const std::string padText = TokenContent(Member(*config, "pad_token")); !padText.empty()) {
      v.pad = idOf(padText);  // a pad token the vocabulary lacks is left out, as transformers pads without one
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
    // The config's tokens name BOS and EOS, except where the post-processor inserts its own
    // (the inserted one is what encoding gives); a config EOS the template does not append
    // still ends generation.
    for (auto [text, id, what, inserted] :
         {std::tuple{&bosText, &v.bos, "bos_token", !around.before.empty()},
          std::tuple{&eosText, &v.eos, "eos_token", !around.after.empty()}}) {
      if (text->empty()) continue;
      const auto named = idOf(*text);
      if (!named) return BadData(fmt::format("{}: {} '{}' is not in the vocabulary", configPath, what, *text));
      if (!inserted) *id = named;
      else if (*named != **id && id == &v.eos) v.extraEndOfGeneration.push_back(*named);
    }
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
