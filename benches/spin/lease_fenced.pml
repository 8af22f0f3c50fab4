/* models/lease-fenced.toml: 2 clients, max-attempts 4, 2 processes, unique-index claim, lease 30000 ms, fencing;
   faults: drop-responses 1, crashes 1, early-timeouts 1, pauses 1. Every property holds. */
#define CLIENTS 2
#define MAX_ATTEMPTS 4
#ifndef FENCING
#define FENCING 1  /* spin -DFENCING=0: the same world without fencing, which must be violated */
#endif
#define DROP_RESPONSES 1
#define CRASHES 1
#define EARLY_TIMEOUTS 1
#define PAUSES 1
#include "lease.pml"
