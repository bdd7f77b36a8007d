// The light front end's stand-ins for the commands only workbook-decoder has.
//
// `workbook` hands `generate` and every command of a heavy stage (bench 5 among them) over
// to workbook-decoder before it parses anything (main.cc), so this is never reached there;
// it lets `workbook` (and its sanitized build) leave out generate_command.cc and the
// generate options, which need the decoder's headers and add a minute to a student's first
// build. workbook-decoder links the real definition instead.
#include "command.h"

namespace wb::cli {

Command AddGenerateCommand(CLI::App& app) {
  CLI::App* c = app.add_subcommand("generate", kGenerateSummary);
  return {c, [] { return ReportError(InternalError("generate reached the front end without the decoder; "
                                                    "it belongs to workbook-decoder")); }};
}

}  // namespace wb::cli
