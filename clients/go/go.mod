module github.com/gangplan/gangplan/clients/go

go 1.19

// The oldest versions the generated code and the wrapper need, and the ones CI builds
// against (Debian bookworm's golang-google-grpc-dev 1.33.3, golang-google-protobuf-dev
// 1.28.1, golang-github-golang-protobuf-1-5-dev 1.5.2); newer ones work. genproto (for
// errdetails.BadRequest) is the version grpc v1.33.3's own go.mod requires: Debian's
// snapshot of it (2020-04-13) is older, and minimal version selection would raise it anyway.
require (
	github.com/golang/protobuf v1.5.2 // indirect
	google.golang.org/genproto v0.0.0-20200526211855-cb27e3aa2013
	google.golang.org/grpc v1.33.3
	google.golang.org/protobuf v1.28.1
)
