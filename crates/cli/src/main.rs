//! `banco`: one binary for every service, client and tool of a banco table (the library
//! holds it all).

use std::process::ExitCode;

// The services allocate and free many small buffers per round, bet and event (records,
// rows, encoded messages) across threads; glibc's allocator spent about 15 % of the
// archive's ingest in malloc and free (perf), mimalloc a fraction of that.
// It is built not to ask for transparent huge pages: the first touch of a fresh 2 MiB page
// stops the thread for as long as the kernel takes to find and clear one. On a virtual
// machine that was 5.5 ms (200 MB in 1.1 s, against 0.08 s in 4 KiB pages), a stall in a
// worker's answers each time a table's memory grew: `banco-bench bets` made 90 such faults
// a run, and its workers spent 45-53 us of CPU a bet against 41 without them.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    banco::main()
}
