// The arena invariant suite (arena_suite.h) on the simulated and host
// backends, several fixed seeds each, plus fault injection (the backend
// failing every 7th segment allocation).
#include <cstdio>

#include "arena/backend.h"
#include "tests/arena_suite.h"
#include "tests/check.h"

// ASan+UBSan (Debug, -O0) runs the same sequences, shorter, checked less
// often, to stay within a few seconds.
#ifdef __SANITIZE_ADDRESS__
constexpr int kSlowdown = 3;
#else
constexpr int kSlowdown = 1;
#endif

int main() {
  using hotpath::arena::test::InvariantSuite;
  using hotpath::arena::test::SuiteConfig;
  hotpath::test::Checker check;
  for (uint64_t seed : {1, 2, 3}) {
    SuiteConfig config;
    config.seed = seed;
    config.operations /= kSlowdown;
    config.check_every *= kSlowdown;
    InvariantSuite(check, config).Run(hotpath::arena::MakeSimulatedBackend(config.capacity));
  }
  for (uint64_t seed : {11, 12}) {
    SuiteConfig config;
    config.seed = seed;
    config.operations = 12000 / kSlowdown;
    config.check_every *= kSlowdown;
    InvariantSuite(check, config).Run(hotpath::arena::MakeHostBackend(config.capacity));
  }
  SuiteConfig faulty;
  faulty.seed = 21;
  faulty.operations = 8000 / kSlowdown;
  InvariantSuite(check, faulty).Run(hotpath::arena::MakeSimulatedBackend(faulty.capacity, 7));
  return check.ExitCode();
}
