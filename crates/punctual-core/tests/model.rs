//! The model test with the reference store on both sides: [`punctual_core::MemoryStore`]
//! against a fresh one of its own.
//!
//! The comparison is trivial here, but everything the model test checks on its own
//! still holds the reference to the contract: every task listed page by page in due
//! order, by tag in the full listing's order, paging sessions across writes visiting
//! each task that stays in place exactly once, a tie order that does not change for
//! tasks nobody wrote, leases handed out in that order, ids that never repeat, fences
//! that grow with each lease and only then, reap's error text naming the expiry, and
//! `Unavailable` after `close`. It also shows the reference deterministic: two fresh
//! stores given the same calls give the same answers.

punctual_testkit::store_model_test!(|| async { (punctual_core::MemoryStore::new(), ()) });
