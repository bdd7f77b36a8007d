// workbook-models: the model library's front ends, `inspect`, `reference` and `convert`. Users reach
// it as `workbook inspect ...` and `workbook reference ...`: the runner's executable hands
// those commands to this one (runner/cli/main.cc), so only they pay for building the
// model-file readers and the eight-family reference. Exit status as in main.cc.
#include <vector>

#include "command.h"

int main(int argc, char** argv) {
  using namespace wb::cli;
  CLI::App app{"Decoder Workbook: model files and the float64 reference decoder.", "workbook"};
  app.require_subcommand(1);
  std::vector<Command> commands = {
      AddReferenceCommand(app),
      AddInspectCommand(app),
      AddConvertCommand(app),
  };
  return ParseAndRun(app, commands, argc, argv);
}
