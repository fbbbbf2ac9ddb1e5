//! Databases of their own for tests of the outbox: a fresh database on the machine's
//! PostgreSQL or MariaDB (`bash .ci/run services` starts them), dropped when the guard
//! goes. The servers are found at `PUNCTUAL_TEST_POSTGRES_URL` and
//! `PUNCTUAL_TEST_MYSQL_URL` (a URL without a database), by default
//! `postgres://postgres@127.0.0.1:5432` and `mysql://punctual:punctual@127.0.0.1:3306`.

use punctual_outbox::{Dialect, execute};

/// A database made for one test; dropped with the guard.
#[derive(Debug)]
pub struct TestDatabase {
    server: String,
    name: String,
    admin: String,
}

impl TestDatabase {
    /// A fresh database on the PostgreSQL server.
    pub async fn postgres() -> TestDatabase {
        let server = server("PUNCTUAL_TEST_POSTGRES_URL", "postgres://postgres@127.0.0.1:5432");
        TestDatabase::create(server, "postgres").await
    }

    /// A fresh database on the MySQL or MariaDB server.
    pub async fn mysql() -> TestDatabase {
        let server = server("PUNCTUAL_TEST_MYSQL_URL", "mysql://punctual:punctual@127.0.0.1:3306");
        TestDatabase::create(server, "mysql").await
    }

    /// One of each dialect, in turn.
    pub async fn of(dialect: Dialect) -> TestDatabase {
        match dialect {
            Dialect::Postgres => TestDatabase::postgres().await,
            Dialect::MySql => TestDatabase::mysql().await,
        }
    }

    async fn create(server: String, admin_db: &str) -> TestDatabase {
        let name = format!("punctual_rs_{:016x}", rand::random::<u64>());
        let admin = format!("{server}/{admin_db}");
        if let Err(e) = execute(&admin, &[&format!("CREATE DATABASE {name}")]).await {
            panic!("cannot create a test database at {server}: {e}\nstart the databases with `bash .ci/run services`");
        }
        TestDatabase { server, name, admin }
    }

    /// The database's URL.
    pub fn url(&self) -> String {
        format!("{}/{}", self.server, self.name)
    }
}

impl Drop for TestDatabase {
    fn drop(&mut self) {
        let (admin, name) = (self.admin.clone(), self.name.clone());
        let force = if admin.starts_with("postgres") { " WITH (FORCE)" } else { "" };
        // A runtime of its own: the guard may drop inside or outside one.
        let dropped = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a runtime");
            runtime.block_on(execute(&admin, &[&format!("DROP DATABASE IF EXISTS {name}{force}")]))
        })
        .join();
        if let Ok(Err(e)) = dropped {
            eprintln!("the test database {} was not dropped: {e}", self.name);
        }
    }
}

fn server(variable: &str, default: &str) -> String {
    std::env::var(variable).unwrap_or_else(|_| default.to_owned()).trim_end_matches('/').to_owned()
}
