// The rigs the benchmarks share live in TestSupport/Rigs (docs/development.md, Tests); a test
// that imports TestRigs gets them too.
@_exported import Rigs
@_exported import PlatformTestSupport
