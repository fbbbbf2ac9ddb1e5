//! Runs the store conformance suite against the embedded store.
punctual_testkit::store_conformance!(|| async {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = punctual_sqlite::SqliteStore::open(dir.path()).expect("open store");
    (store, dir)
});
