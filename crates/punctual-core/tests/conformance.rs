//! Runs the store conformance suite, unchanged, against the reference store,
//! [`punctual_core::MemoryStore`]: the contract's executable form must pass the checks
//! every backend passes, or the model test would hold real stores to a wrong standard.

punctual_testkit::store_conformance!(|| async { (punctual_core::MemoryStore::new(), ()) });
