//! The `facts` import of every contract version the host serves, each
//! implemented on [`crate::facts::FactServer`] (one WIT interface per
//! module, as Spin's host capabilities are): [`current`], the current
//! contract's, in a file named for no version, so a version bump adds a
//! small delegate and moves nothing; `v0_4`, `v0_3`, `v0_2` and `v0_1`,
//! the older imports, delegating to it through [`crate::contract::convert`].

mod current;
mod v0_1;
mod v0_2;
mod v0_3;
mod v0_4;
