"""Cancellation storm from gRPC's C core (grpcio), the official Python client's
transport: on each of CONNECTIONS fresh channels, 200 concurrent ModelInfer
calls, 80% with deadlines of 1 us to 2 ms and the rest 10 s. Prints how many
10-second calls failed and why (issue #21, item 10; README "Hostile and
careless clients").

  /usr/bin/python3 bench/probes/grpcio-cancel-storm.py HOST:PORT BODY [CONNECTIONS]

BODY is one length-prefixed ModelInfer frame, e.g. from
`node dist/bench/load/write-request-body.js ctr_mlp /tmp/body.bin`. Needs
grpcio (Debian: python3-grpcio). A probe, not a test: nothing in npm test
runs it.
"""
import random
import sys

import grpc


def main() -> None:
    address, body_file = sys.argv[1], sys.argv[2]
    connections = int(sys.argv[3]) if len(sys.argv) > 3 else 30
    with open(body_file, 'rb') as f:
        body = f.read()[5:]  # the message without its gRPC frame prefix
    identity = lambda b: b  # noqa: E731 - raw bytes both ways
    random.seed(7)
    long_total = long_failed = 0
    errors: dict[str, int] = {}
    for _ in range(connections):
        channel = grpc.insecure_channel(address, options=[('grpc.use_local_subchannel_pool', 1)])
        infer = channel.unary_unary('/inference.GRPCInferenceService/ModelInfer',
                                    request_serializer=identity, response_deserializer=identity)
        calls = []
        for _ in range(200):
            short = random.random() < 0.8
            calls.append((short, infer.future(body, timeout=random.uniform(1e-6, 2e-3) if short else 10.0)))
        for short, call in calls:
            if not short:
                long_total += 1
            try:
                call.result()
            except grpc.RpcError as err:
                if not short:
                    long_failed += 1
                    key = f'{err.code().name}: {err.details()[:80]}'
                    errors[key] = errors.get(key, 0) + 1
        channel.close()
    print(f'long-deadline calls: {long_total}, failed: {long_failed}')
    for key, count in sorted(errors.items(), key=lambda kv: -kv[1])[:8]:
        print(f'  {count} x {key}')


if __name__ == '__main__':
    main()
