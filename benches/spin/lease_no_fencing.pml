/* models/lease-no-fencing.toml, the broken twin: 1 client, max-attempts 3, 2 processes, unique-index claim,
   lease 30000 ms, no fencing; faults: pauses 1, early-timeouts 1. no-duplicate-effect is violated: the lease runs
   out while its owner is only paused, a retry takes over, and both commit. */
#define CLIENTS 1
#define MAX_ATTEMPTS 3
#define FENCING 0
#define DROP_RESPONSES 0
#define CRASHES 0
#define EARLY_TIMEOUTS 1
#define PAUSES 1
#include "lease.pml"
