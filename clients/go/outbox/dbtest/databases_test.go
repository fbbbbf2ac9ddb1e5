package dbtest_test

// The test databases: each run creates a database of its own (punctual_go_<random>) in
// PostgreSQL and in MariaDB, creates the outbox tables there with the repository's DDL
// (crates/punctual-outbox/sql), and drops it when the test ends.
//
//	PUNCTUAL_TEST_POSTGRES_URL  default postgres://postgres@127.0.0.1:5432/postgres
//	PUNCTUAL_TEST_MYSQL_URL     default mysql://punctual:punctual@127.0.0.1:3306/

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	_ "github.com/jackc/pgx/v5/stdlib"
)

const ddlDir = "../../../../crates/punctual-outbox/sql"

func envOr(name, fallback string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return fallback
}

func uniqueDatabaseName(t *testing.T) string {
	random := make([]byte, 6)
	if _, err := rand.Read(random); err != nil {
		t.Fatal(err)
	}
	return "punctual_go_" + hex.EncodeToString(random)
}

func parseURL(t *testing.T, variable, raw string) *url.URL {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		t.Fatalf("%s=%s is not a URL such as scheme://user:password@host:port/database", variable, u.Redacted())
	}
	return u
}

// mustAnswer fails the test, saying what to start, when the database does not answer.
func mustAnswer(t *testing.T, ctx context.Context, db *sql.DB, what, variable string, u *url.URL) {
	t.Helper()
	if err := db.PingContext(ctx); err != nil {
		t.Fatalf("%s at %s does not answer (%v): start it with `bash .ci/run services`, or point %s at one",
			what, u.Redacted(), err, variable)
	}
}

// openPostgres creates this run's PostgreSQL database with the outbox tables.
func openPostgres(t *testing.T, tables ...string) *sql.DB {
	const variable = "PUNCTUAL_TEST_POSTGRES_URL"
	u := parseURL(t, variable, envOr(variable, "postgres://postgres@127.0.0.1:5432/postgres"))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	admin, err := sql.Open("pgx", u.String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Close() })
	mustAnswer(t, ctx, admin, "PostgreSQL", variable, u)
	name := uniqueDatabaseName(t)
	if _, err := admin.ExecContext(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatal(err)
	}
	own := *u
	own.Path = "/" + name
	db, err := sql.Open("pgx", own.String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		db.Close()
		if _, err := admin.ExecContext(context.Background(), "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			t.Errorf("dropping %s: %v", name, err)
		}
	})
	createTables(t, ctx, db, "postgres.sql", tables)
	return db
}

// openMariaDB creates this run's MariaDB (or MySQL) database with the outbox tables.
func openMariaDB(t *testing.T, tables ...string) *sql.DB {
	const variable = "PUNCTUAL_TEST_MYSQL_URL"
	u := parseURL(t, variable, envOr(variable, "mysql://punctual:punctual@127.0.0.1:3306/"))
	config := mysql.NewConfig()
	config.User = u.User.Username()
	config.Passwd, _ = u.User.Password()
	config.Net = "tcp"
	config.Addr = u.Host
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	admin, err := sql.Open("mysql", config.FormatDSN())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Close() })
	mustAnswer(t, ctx, admin, "MariaDB", variable, u)
	name := uniqueDatabaseName(t)
	if _, err := admin.ExecContext(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatal(err)
	}
	config.DBName = name
	db, err := sql.Open("mysql", config.FormatDSN())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		db.Close()
		if _, err := admin.ExecContext(context.Background(), "DROP DATABASE IF EXISTS "+name); err != nil {
			t.Errorf("dropping %s: %v", name, err)
		}
	})
	createTables(t, ctx, db, "mysql.sql", tables)
	return db
}

// createTables runs the repository's DDL once per table, with every punctual_outbox
// in it renamed, as `punctual outbox init --table` does.
func createTables(t *testing.T, ctx context.Context, db *sql.DB, file string, tables []string) {
	t.Helper()
	ddl, err := os.ReadFile(filepath.Join(ddlDir, file))
	if err != nil {
		t.Fatal(err)
	}
	for _, table := range tables {
		for _, statement := range sqlStatements(strings.ReplaceAll(string(ddl), "punctual_outbox", table)) {
			if _, err := db.ExecContext(ctx, statement); err != nil {
				t.Fatalf("%s for table %s: %v\n%s", file, table, err, statement)
			}
		}
	}
}

// sqlStatements splits a script on the semicolons that end statements: not those in
// -- comments (dropped), in quoted strings, or in a $$…$$ function body.
func sqlStatements(script string) []string {
	var statements []string
	var current strings.Builder
	inDollarBody, inString := false, false
	for i := 0; i < len(script); i++ {
		c := script[i]
		switch {
		case inString:
			inString = c != '\''
		case inDollarBody:
			inDollarBody = !strings.HasPrefix(script[i:], "$$")
			if !inDollarBody {
				current.WriteString("$$")
				i++
				continue
			}
		case strings.HasPrefix(script[i:], "--"):
			for i < len(script) && script[i] != '\n' {
				i++
			}
			c = '\n'
		case strings.HasPrefix(script[i:], "$$"):
			inDollarBody = true
			current.WriteString("$$")
			i++
			continue
		case c == '\'':
			inString = true
		case c == ';':
			if s := strings.TrimSpace(current.String()); s != "" {
				statements = append(statements, s)
			}
			current.Reset()
			continue
		}
		current.WriteByte(c)
	}
	if s := strings.TrimSpace(current.String()); s != "" {
		statements = append(statements, s)
	}
	return statements
}
