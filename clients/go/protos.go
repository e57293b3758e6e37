package gangplan

import "embed"

// Protos holds the .proto files the gangplanv1 stubs were generated from
// (proto/gangplan/v1/*.proto), for tools that read them: reflection-less clients, linters,
// code generators in other languages.
//
//go:embed proto/gangplan/v1/*.proto
var Protos embed.FS
