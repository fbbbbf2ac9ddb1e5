// Package dbtest tests package outbox against real databases: PostgreSQL through
// github.com/jackc/pgx/v5/stdlib and MariaDB (or MySQL) through
// github.com/go-sql-driver/mysql. It is a module of its own so that the client's module
// keeps no dependency outside the standard library, nor these drivers' newer Go
// version; it holds nothing but tests.
package dbtest
