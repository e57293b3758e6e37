"""The gRPC service (`gangplan serve`): generated stubs, proto <-> model conversion, the
servicer, interceptors (auth, metrics) and the `create_server()` factory.

Not built yet: it is tracked by the gRPC issue. The library in `solver` is what the
service will call; nothing here is imported by the CLI today.
"""
