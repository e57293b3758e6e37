module github.com/gangplan/gangplan/clients/go

go 1.19

// The oldest versions the generated code and the wrapper need (the ones CI builds against,
// from Debian's golang-google-grpc-dev and golang-google-protobuf-dev); newer ones work.
require (
	github.com/golang/protobuf v1.5.2
	google.golang.org/genproto v0.0.0-20201019141844-1ed22bb0c154
	google.golang.org/grpc v1.33.3
	google.golang.org/protobuf v1.28.1
)
