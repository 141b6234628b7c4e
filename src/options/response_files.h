// Response files: an argument "@path" is replaced by the arguments in that file, one per line,
// taken literally (no quoting, no escapes, no comments; a trailing "\r" is dropped and empty lines
// are skipped). Long lists of node names thus never need the command line, whose length is
// limited, and any name survives: spaces, brackets, quotes, a leading "-" (write it as
// "--nodes_to_exclude=<name>"). Files are not expanded recursively. "@" alone is an argument.
// Pure function apart from reading the files; thread-safe.
#pragma once

#include <string>
#include <vector>

namespace ptqkit::options {

// argv[1..] with every "@file" expanded. Throws ptqkit::Error naming the file when it cannot be
// read (only regular files are read).
std::vector<std::string> ExpandResponseFiles(int argc, const char* const* argv);

// The lines of a list file (--nodes_to_exclude_file ...): the same rules as a response file.
std::vector<std::string> ReadListFile(const std::string& path, const std::string& option);

}  // namespace ptqkit::options
