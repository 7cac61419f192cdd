# syntax=docker/dockerfile:1
# hotpath's container image: a build stage with the toolchain, a runtime stage
# with Node, dist/, the production node_modules, the native addon and the
# sample models, run as a non-root user.
#
#   docker build -t hotpath:0.1.0 .                                  # CPU nodes
#   docker build --build-arg VARIANT=cuda -t hotpath:0.1.0-cuda .    # GPU nodes
#
# VARIANT picks the base of both stages: `cpu` is Debian with Node; `cuda` is
# NVIDIA's CUDA image (devel to build the CUDA kernels, runtime to run them:
# cudart and cuBLAS), with the same Node copied in. Without a usable device
# the CUDA image still serves, on CPU, as the CPU image does.
ARG VARIANT=cpu
ARG NODE_VERSION=24
ARG CUDA_VERSION=13.0.1
ARG CUDA_UBUNTU=ubuntu24.04

FROM node:${NODE_VERSION}-bookworm-slim AS node

# ---- build stages: toolchain + full install (runs the native and TS builds)
FROM node:${NODE_VERSION}-bookworm AS build-base-cpu

FROM nvidia/cuda:${CUDA_VERSION}-devel-${CUDA_UBUNTU} AS build-base-cuda
COPY --from=node /usr/local/bin/node /usr/local/bin/node
COPY --from=node /usr/local/lib/node_modules /usr/local/lib/node_modules
RUN ln -s ../lib/node_modules/npm/bin/npm-cli.js /usr/local/bin/npm \
 && ln -s ../lib/node_modules/npm/bin/npx-cli.js /usr/local/bin/npx

FROM build-base-${VARIANT} AS build
RUN apt-get update \
 && apt-get install -y --no-install-recommends cmake g++ make python3 ca-certificates \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /build
COPY . .
# `npm ci`: exactly the lock's packages. Its postinstall builds the native
# addon (cmake-js; CUDA when nvcc is there), dist/ and the sample models that
# are generated rather than committed (models/ranker_mlp/1/model.onnx; the
# build fails if it is missing). ONNXRUNTIME_NODE_INSTALL=skip: package.json's
# allowScripts already denies onnxruntime-node's download of its CUDA provider
# (npm >= 11.19); the variable does the same for whatever npm the Node image
# bundles. Then the dev packages go, and onnxruntime-node keeps only this
# platform's binaries (darwin and win32 are ~220 MB).
RUN ONNXRUNTIME_NODE_INSTALL=skip npm ci --no-audit --no-fund \
 && test -s models/ranker_mlp/1/model.onnx \
 && npm prune --omit=dev --no-audit --no-fund \
 && keep="linux/$(node -p process.arch)" \
 && for dir in node_modules/onnxruntime-node/bin/napi-v*/*/*; do \
      case "$dir" in */"$keep") ;; *) rm -rf "$dir" ;; esac; \
    done \
 && find node_modules/onnxruntime-node/bin -type d -empty -delete \
 && test -f "node_modules/onnxruntime-node/bin/napi-v6/$keep/onnxruntime_binding.node"

# ---- runtime stages: Node and the libraries the addon needs, nothing else
FROM node:${NODE_VERSION}-bookworm-slim AS runtime-base-cpu

FROM nvidia/cuda:${CUDA_VERSION}-runtime-${CUDA_UBUNTU} AS runtime-base-cuda
COPY --from=node /usr/local/bin/node /usr/local/bin/node

FROM runtime-base-${VARIANT} AS runtime
ENV NODE_ENV=production
WORKDIR /opt/hotpath
COPY --from=build /build/package.json ./package.json
COPY --from=build /build/node_modules ./node_modules
COPY --from=build /build/dist ./dist
COPY --from=build /build/build-cmake/Release/hotpath_native.node ./build-cmake/Release/hotpath_native.node
COPY --from=build /build/models ./models
COPY --from=build /build/deploy/docker/healthcheck.mjs ./deploy/docker/healthcheck.mjs
# A fixed non-root uid, so Kubernetes' runAsNonRoot can check it.
RUN groupadd --system --gid 10001 hotpath \
 && useradd --system --uid 10001 --gid hotpath --no-create-home hotpath
USER 10001:10001
# HTTP/REST + health, gRPC, Prometheus metrics (Triton's ports).
EXPOSE 8000 8001 8002
# Ready on the HTTP port the server was given (8000 by default; KServe's
# runtime passes --http-port=8080): the script finds the ports the server
# listens on and asks /v2/health/ready (the image has no curl).
HEALTHCHECK --interval=10s --timeout=5s --start-period=60s --retries=3 \
  CMD ["node", "/opt/hotpath/deploy/docker/healthcheck.mjs"]
ENTRYPOINT ["node", "/opt/hotpath/dist/src/cli.js"]
CMD ["serve", "--model-repository", "/opt/hotpath/models"]
