//! Round ids: unique, sortable, and readable by a person at the table. The type is a
//! stored format's ([`banco_records`]).

pub use banco_records::RoundId;
