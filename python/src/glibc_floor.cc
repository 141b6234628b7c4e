// Keeps the wheel's glibc floor at 2.34 (manylinux_2_34: RHEL 9, Ubuntu 22.04) instead of the
// build machine's 2.36. The self-contained extension links libstdc++ statically, and GCC 12's
// libstdc++.a reaches std::random_device's arc4random path from std::runtime_error (stdexcept.o ->
// cow-string-inst.o -> random.o), which binds arc4random@GLIBC_2.36. This definition, hidden inside
// the extension, satisfies that reference from getrandom (glibc 2.25). ptqkit itself never draws
// random numbers through std::random_device.
#ifdef PTQKIT_SELF_CONTAINED
#include <sys/random.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>

extern "C" __attribute__((visibility("hidden"))) uint32_t arc4random() noexcept {
  uint32_t value = 0;
  auto* bytes = reinterpret_cast<unsigned char*>(&value);
  size_t got = 0;
  while (got < sizeof value) {
    const ssize_t n = getrandom(bytes + got, sizeof value - got, 0);
    if (n > 0) {
      got += static_cast<size_t>(n);
    } else if (errno != EINTR) {
      break;  // no getrandom (Linux < 3.17): nothing in ptqkit depends on these bits
    }
  }
  return value;
}
#endif
