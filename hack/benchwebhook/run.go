package main

import (
	"context"
	"io"
)

func run(ctx context.Context, c config, out io.Writer) error { return nil }
