//! `banco`: one binary for every service, client and tool of a banco table (the library
//! holds it all).

use std::process::ExitCode;

// The services allocate and free many small buffers per round, bet and event (records,
// rows, encoded messages) across threads; glibc's allocator spent about 15 % of the
// archive's ingest in malloc and free (perf), mimalloc a fraction of that.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    banco::main()
}
