#include "cli/run.h"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdio>
#include <exception>
#include <new>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/progress_bar.h"
#include "options/response_files.h"
#include "ptqkit/error.h"

namespace ptqkit::cli {
namespace {

int Fail(int code, const std::string& message) {
  std::fprintf(stderr, "ptqkit: error: %s\n", message.c_str());
  return code;
}

// Levenshtein distance, for "did you mean".
size_t EditDistance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = up;
    }
  }
  return row[b.size()];
}

// The first argument names the subcommand; CLI11 would only say "A subcommand is required" for a
// misspelt one. "" when it is known (or an option, such as --help).
std::string UnknownSubcommand(const CLI::App& app, const std::vector<std::string>& args) {
  if (args.size() < 2 || args[1].empty() || args[1][0] == '-') return "";
  std::string names, closest;
  size_t best = 3;  // suggest only near misses
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) {
    if (sub->get_name() == args[1]) return "";
    names += (names.empty() ? "" : ", ") + sub->get_name();
    const size_t d = EditDistance(args[1], sub->get_name());
    if (d < best) best = d, closest = sub->get_name();
  }
  return "unknown subcommand '" + args[1] + "'" + (closest.empty() ? "" : " (did you mean '" + closest + "'?)") +
         "; the subcommands are: " + names;
}

}  // namespace

int RunCommandLine(int argc, const char* const* argv) {
  CLI::App app{"ptqkit: post-training quantization of ONNX models (INT8 Q/DQ for TensorRT and ONNX Runtime)"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "ptqkit " PTQKIT_VERSION);
  app.footer("Arguments can be read from a file: @FILE stands for the lines of FILE, one argument each.");
  const Command quantize = RegisterQuantize(app);
  const Command inspect = RegisterInspect(app);
  const Command exclude = RegisterExclude(app);
  const Command sensitivity = RegisterSensitivity(app);
  const Command calibrate = RegisterCalibrate(app);
  const Command options = RegisterOptions(app);
  const Command autotune = RegisterAutotune(app);
  try {
    std::vector<std::string> args = options::ExpandResponseFiles(argc, argv);
    args.insert(args.begin(), argc > 0 ? argv[0] : "ptqkit");
    if (const std::string unknown = UnknownSubcommand(app, args); !unknown.empty()) return Fail(2, unknown);
    std::vector<const char*> expanded;
    for (const auto& arg : args) expanded.push_back(arg.c_str());
    try {
      app.parse(static_cast<int>(expanded.size()), expanded.data());
    } catch (const CLI::CallForHelp& e) {
      return app.exit(e);
    } catch (const CLI::CallForAllHelp& e) {
      return app.exit(e);
    } catch (const CLI::CallForVersion& e) {
      return app.exit(e);
    } catch (const CLI::ParseError& e) {
      return Fail(2, e.what());
    }
    ProgressDisplay progress;  // every long stage of the command: a bar on a terminal, else periodic lines
    if (app.got_subcommand("quantize")) return quantize();
    if (app.got_subcommand("inspect")) return inspect();
    if (app.got_subcommand("exclude")) return exclude();
    if (app.got_subcommand("sensitivity")) return sensitivity();
    if (app.got_subcommand("calibrate")) return calibrate();
    if (app.got_subcommand("options")) return options();
    if (app.got_subcommand("autotune")) return autotune();
    return 2;
  } catch (const Error& e) {
    return Fail(1, e.what());
  } catch (const std::bad_alloc&) {
    // Sizes that inputs declare are checked before allocating (base/memory_limit.h); what is left
    // is a model or data set that truly does not fit.
    return Fail(1, "out of memory: the model and calibration data need more memory than is available");
  } catch (const std::exception& e) {
    return Fail(3, std::string("internal error (please report it): ") + e.what());
  }
}

}  // namespace ptqkit::cli
