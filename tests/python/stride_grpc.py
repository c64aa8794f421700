"""Python stubs for stride's gRPC service (proto/stride/v1/inference.proto) and
the standard health service, compiled at import time by grpcio-tools' protoc
into a temporary folder, so they always match the .proto in the tree."""
import importlib
import os
import sys
import tempfile

from grpc_tools import protoc

from stride_server import ROOT

_OUT = tempfile.mkdtemp(prefix="stride-grpc-stubs-")
_HERE = os.path.dirname(os.path.abspath(__file__))
for proto_path, proto in [(os.path.join(ROOT, "proto"), "stride/v1/inference.proto"),
                          (os.path.join(_HERE, "protos"), "health.proto")]:
    rc = protoc.main(["protoc", f"--proto_path={proto_path}", f"--python_out={_OUT}", f"--grpc_python_out={_OUT}",
                      os.path.join(proto_path, proto)])
    assert rc == 0, f"protoc failed on {proto}"
sys.path.insert(0, _OUT)
inference_pb2 = importlib.import_module("stride.v1.inference_pb2")
inference_pb2_grpc = importlib.import_module("stride.v1.inference_pb2_grpc")
health_pb2 = importlib.import_module("health_pb2")
health_pb2_grpc = importlib.import_module("health_pb2_grpc")
