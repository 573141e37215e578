#!/usr/bin/python3
"""A Python client of a running `oomguard serve`, as an RL pipeline would be.

Uses Debian's python3-grpcio (run it with /usr/bin/python3) and no generated
stubs: requests are raw protobuf bytes. Checks, in order:
  1. grpc.health.v1.Health/Check: SERVING for the server and the service;
  2. server reflection lists oomguard.v1.Oomguard, Health and reflection;
  3. oomguard.v1.Oomguard/Check with the request bytes from --check-request
     (serialized by the C++ test) answers; the response bytes are written to
     --check-response for the C++ test to parse;
  4. a Check without a job is INVALID_ARGUMENT naming the field;
  5. /metrics on --metrics-port counts those two Check calls.
Exits 0 when all hold, 1 (with the reason on stderr) otherwise.
"""

import argparse
import sys
import urllib.request

import grpc

REFLECTION = "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo"
SERVING = b"\x08\x01"  # HealthCheckResponse{status: SERVING}


def read_varint(data, pos):
    value, shift = 0, 0
    while True:
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, pos
        shift += 7


def fields(data):
    """Yields (field number, value) of a protobuf message; length-delimited
    values as bytes, varints as ints (enough for the messages read here)."""
    pos = 0
    while pos < len(data):
        key, pos = read_varint(data, pos)
        number, wire_type = key >> 3, key & 7
        if wire_type == 0:
            value, pos = read_varint(data, pos)
        elif wire_type == 2:
            size, pos = read_varint(data, pos)
            value, pos = data[pos:pos + size], pos + size
        else:
            raise ValueError(f"unexpected wire type {wire_type}")
        yield number, value


def varint(value):
    out = bytearray()
    while True:
        out.append(value & 0x7F | (0x80 if value > 0x7F else 0))
        value >>= 7
        if not value:
            return bytes(out)


def string_field(number, text):
    raw = text.encode()
    return varint(number << 3 | 2) + varint(len(raw)) + raw


def check_health(channel, timeout):
    health = channel.unary_unary("/grpc.health.v1.Health/Check")
    for service in ("", "oomguard.v1.Oomguard"):
        request = string_field(1, service) if service else b""
        response = health(request, timeout=timeout)
        if response != SERVING:
            raise AssertionError(f"health of {service!r}: {response!r}, want SERVING")


def list_services(channel, timeout):
    reflection = channel.stream_stream(REFLECTION)
    request = string_field(7, "")  # ServerReflectionRequest{list_services: ""}
    names = []
    for response in reflection(iter([request]), timeout=timeout):
        for number, value in fields(response):
            if number == 6:  # list_services_response
                for _, service in fields(value):  # repeated ServiceResponse
                    names += [v.decode() for n, v in fields(service) if n == 1]
    return names


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--target", required=True)
    parser.add_argument("--check-request", required=True)
    parser.add_argument("--check-response", required=True)
    parser.add_argument("--metrics-port", type=int, required=True)
    parser.add_argument("--timeout", type=float, default=10)
    args = parser.parse_args()

    with grpc.insecure_channel(args.target) as channel:
        grpc.channel_ready_future(channel).result(timeout=args.timeout)
        check_health(channel, args.timeout)

        services = list_services(channel, args.timeout)
        for want in ("oomguard.v1.Oomguard", "grpc.health.v1.Health",
                     "grpc.reflection.v1alpha.ServerReflection"):
            if want not in services:
                raise AssertionError(f"reflection lists {services}, not {want}")

        check = channel.unary_unary("/oomguard.v1.Oomguard/Check")
        with open(args.check_request, "rb") as f:
            response = check(f.read(), timeout=args.timeout)
        with open(args.check_response, "wb") as f:
            f.write(response)

        try:
            check(b"", timeout=args.timeout)
            raise AssertionError("a Check without a job succeeded")
        except grpc.RpcError as error:
            if error.code() != grpc.StatusCode.INVALID_ARGUMENT or \
                    "job: missing" not in error.details():
                raise AssertionError(f"empty Check: {error.code()} {error.details()!r}")

    url = f"http://127.0.0.1:{args.metrics_port}/metrics"
    with urllib.request.urlopen(url, timeout=args.timeout) as reply:
        metrics = reply.read().decode()
    for want in ('oomguard_requests_total{code="OK",method="Check",transport="grpc"} 1',
                 'oomguard_requests_total{code="INVALID_ARGUMENT",method="Check",transport="grpc"} 1'):
        if want not in metrics:
            raise AssertionError(f"/metrics lacks {want!r}")
    print(f"ok: SERVING; services {sorted(services)}; Check answered "
          f"{len(response)} bytes; /metrics counts both calls")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except Exception as error:  # pylint: disable=broad-except
        print(f"python client: {type(error).__name__}: {error}", file=sys.stderr)
        sys.exit(1)
