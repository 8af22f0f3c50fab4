// pgx (v4, Debian's) through the PostgreSQL gate: a parameterised INSERT in a transaction several times (pgx's
// statement cache prepares it once, named, and binds that name afterwards), then a Batch of three INSERTs in one
// transaction. os.Args[1]: a postgres:// URL (sslmode=prefer).
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/jackc/pgx/v4"
)

const insert = "INSERT INTO t (k, v) VALUES ($1, $2)"

func main() {
	if err := run(context.Background(), os.Args[1]); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func run(ctx context.Context, url string) error {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	for k := 0; k < 7; k++ {
		tx, err := conn.Begin(ctx)
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, insert, k, "pgx"); err != nil {
			return err
		}
		if err := tx.Commit(ctx); err != nil {
			return err
		}
	}
	tx, err := conn.Begin(ctx)
	if err != nil {
		return err
	}
	batch := &pgx.Batch{}
	for k := 100; k < 103; k++ {
		batch.Queue(insert, k, "pgx batch")
	}
	if err := tx.SendBatch(ctx, batch).Close(); err != nil {
		return err
	}
	return tx.Commit(ctx)
}
