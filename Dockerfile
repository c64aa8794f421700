# stride in a container: a portable build (AVX2 + the AVX-512 VNNI path picked
# at start), run as a non-root user, the model mounted at /models or baked in.
#
#   docker build -t stride .                                   # model mounted at run time
#   docker run --rm -p 8080:8080 -v "$PWD/models:/models:ro" \
#     -e STRIDE_API_KEYS=change-me stride                        # keys: required beyond loopback
#   docker build -t stride:smol --target baked \
#     --build-arg MODEL=models/SmolLM2-135M-Instruct.Q4_1.gguf .  # model inside the image
#
# docs/deploy.md has the details (drain on stop, health checks, Kubernetes).
ARG DEBIAN_IMAGE=debian:bookworm-slim

# ---- build: the packages scripts/setup --runtime installs, then cmake --install ----
FROM ${DEBIAN_IMAGE} AS build
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      build-essential cmake ninja-build pkg-config libboost1.81-dev nlohmann-json3-dev libpcre2-dev libicu-dev \
      libcli11-dev libssl-dev libyaml-cpp-dev \
      libgrpc++-dev libprotobuf-dev protobuf-compiler protobuf-compiler-grpc libhiredis-dev libgloo-dev \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY CMakeLists.txt README.md ./
COPY src src
COPY cmake cmake
COPY web web
COPY proto proto
COPY configs configs
COPY docs docs
# STRIDE_NATIVE stays OFF: the image runs on any x86-64 CPU with AVX2.
RUN cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DSTRIDE_TESTS=OFF \
 && cmake --build build --target stride \
 && cmake --install build --prefix /opt/stride

# ---- runtime: glibc, curl for the health check, the installed prefix ----
FROM ${DEBIAN_IMAGE} AS runtime
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends curl ca-certificates \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --system --uid 10001 --home-dir /nonexistent --shell /usr/sbin/nologin stride \
 && mkdir -p /models /etc/stride \
 && chown -R root:root /models /etc/stride
COPY --from=build /opt/stride /opt/stride
# The installed prefix carries its libraries; `stride info` proves it runs here.
RUN /opt/stride/bin/stride info >/dev/null
ENV PATH=/opt/stride/bin:$PATH \
    STRIDE_HOST=0.0.0.0 \
    STRIDE_PORT=8080
USER 10001:10001
EXPOSE 8080
# /health answers as soon as HTTP is up; /ready (503 while loading or draining)
# is for load balancers and Kubernetes readiness, not for restarting.
HEALTHCHECK --interval=15s --timeout=3s --start-period=60s --retries=3 \
  CMD curl -fsS http://127.0.0.1:8080/health >/dev/null || exit 1
# SIGTERM: new requests get 503, running ones finish, exit 0. Give it time:
# docker stop --time 660 (request_timeout_s is 600 by default).
STOPSIGNAL SIGTERM
ENTRYPOINT ["/opt/stride/bin/stride"]
CMD ["serve", "--model", "/models/model.gguf"]

# ---- baked: the model copied into the image (docker build --target baked --build-arg MODEL=...) ----
FROM runtime AS baked
ARG MODEL=models/SmolLM2-135M-Instruct.Q4_1.gguf
COPY --chown=root:root ${MODEL} /models/model.gguf

# ---- the default target: runtime, with the model mounted at /models ----
FROM runtime
