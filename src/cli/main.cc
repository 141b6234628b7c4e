// ptqkit command line: `ptqkit <quantize|calibrate|sensitivity|exclude|inspect> [options]`. Options are spelled as in
// ModelOpt's `python -m modelopt.onnx.quantization`. Unknown options are refused (ModelOpt
// silently ignores some); errors print one line "ptqkit: error: ..." and exit non-zero (cli/run.h
// lists the exit codes).
#include "cli/run.h"

int main(int argc, char** argv) { return ptqkit::cli::RunCommandLine(argc, argv); }
