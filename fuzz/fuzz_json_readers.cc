// libFuzzer harness: the JSON files users hand to ptqkit. The first byte picks the reader: a
// sensitivity scores file (ReadResult), a calibration cache (CalibrationTable::Load) or a blocks
// file (ReadBlocksFile); scores that load are also fed to the picker and the summary. Rejections
// must be ptqkit::Error, never the JSON library's exceptions.
#include <cstddef>
#include <cstdint>

#include "calib/calibration_table.h"
#include "fuzz_util.h"
#include "ptqkit/error.h"
#include "ptqkit/picker.h"
#include "sensitivity/blocks_file.h"
#include "sensitivity/scores_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const uint8_t mode = data[0] % 3;
  const std::string path = ptqkit::fuzz::WriteScratch(data + 1, size - 1, ".json");
  try {
    if (mode == 0) {
      const auto result = ptqkit::sensitivity::ReadResult(path);
      ptqkit::PickerOptions options;
      const auto pick = ptqkit::SuggestExclusion(result.scores, options);
      (void)ptqkit::SummarizeExclusion(result.scores, pick.excluded);
    } else if (mode == 1) {
      (void)ptqkit::calib::CalibrationTable::Load(path);
    } else {
      (void)ptqkit::sensitivity::ReadBlocksFile(path);
    }
  } catch (const ptqkit::Error&) {
  }
  return 0;
}
