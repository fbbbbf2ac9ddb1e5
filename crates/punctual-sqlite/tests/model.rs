//! Random operation sequences against the embedded store, checked against the model.
punctual_testkit::store_model_test!(|| async {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = punctual_sqlite::SqliteStore::open(dir.path()).expect("open store");
    (store, dir)
});
