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
ARG NODE_VERSION=20
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
# The README's install: postinstall builds the native addon (cmake-js; CUDA
# when nvcc is there), the TypeScript build and the sample models. Then the
# dev packages go. `npm install` rather than `npm ci`: vite (a test
# dependency) names an optional Windows-only package the registry lacks, so
# the lock file cannot list it and `npm ci` refuses; the lock still pins
# every package that is installed.
RUN npm install --no-audit --no-fund && npm prune --omit=dev

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
# A fixed non-root uid, so Kubernetes' runAsNonRoot can check it.
RUN groupadd --system --gid 10001 hotpath \
 && useradd --system --uid 10001 --gid hotpath --no-create-home hotpath
USER 10001:10001
# HTTP/REST + health, gRPC, Prometheus metrics (Triton's ports).
EXPOSE 8000 8001 8002
# The image has no curl: Node asks the readiness endpoint itself.
HEALTHCHECK --interval=10s --timeout=3s --start-period=60s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:8000/v2/health/ready').then(r => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
ENTRYPOINT ["node", "/opt/hotpath/dist/src/cli.js"]
CMD ["serve", "--model-repository", "/opt/hotpath/models"]
