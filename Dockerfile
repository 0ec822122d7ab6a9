# syntax=docker/dockerfile:1
# The bidder as a container: PM2 in cluster mode (pm2-runtime, ecosystem.config.js), one worker per
# CPU the container may use (its CPU quota, rounded up) unless WORKERS says otherwise. Redis is
# outside the image: set REDIS_URL (with an append-only file, maxmemory-policy noeviction). As
# production it needs the secrets, TRACKING_BASE_URL and EXCHANGES_FILE (docs/operations.md,
# Production settings). Kubernetes manifests: deploy/k8s/ (docs/kubernetes.md).
#
#   docker build -t openrtb-bidder .
#   docker run -p 8080:8080 -e REDIS_URL=redis://redis-host:6379 -e TRACKING_SECRET=… -e PII_HASH_SECRET=… \
#     -e TRACKING_BASE_URL=https://bidder.example.com -v "$PWD/exchanges.json:/etc/bidder/exchanges.json:ro" \
#     -e EXCHANGES_FILE=/etc/bidder/exchanges.json --stop-timeout 20 openrtb-bidder
#
# See docs/operations.md. test/ops/dockerfile.spec.ts checks this file's shape.

# ---- build: all dependencies, compile TypeScript, then drop the dev dependencies ----------------
FROM node:24-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
# The npm `node` package brings the project its Node 24 on machines that lack it; the image has Node
# 24 already. Its install script (the only one among the dependencies) would download a 126 MB
# binary, so scripts are skipped and the package is removed with its command link.
RUN npm ci --no-audit --no-fund --ignore-scripts \
 && rm -rf node_modules/node node_modules/.bin/node
COPY . .
RUN npm run build \
 && npm prune --omit=dev --no-audit --no-fund --ignore-scripts \
 && rm -rf node_modules/node node_modules/.bin/node

# ---- runtime: slim Node 24, production dependencies and dist/ only, not root -------------------
FROM node:24-bookworm-slim AS runtime
ENV NODE_ENV=production \
    PORT=8080 \
    BIDDER_RUN_DIR=/app/.run \
    PM2_HOME=/app/.run/pm2 \
    LOG_SPILL_DIR=/app/.run/spill \
    BIDDER_OUT_FILE=/dev/null \
    BIDDER_ERR_FILE=/dev/null
WORKDIR /app
# jemalloc for every process of the container (pm2-runtime and the workers it forks), as
# scripts/pm2.js gives it to `npm start`: glibc's malloc keeps a worker's main arena at its
# high-water mark after a burst of requests in flight, jemalloc returns unused pages within seconds
# (bench/RESULTS.md, "Soak"). Linked under one name for every architecture.
RUN apt-get update \
 && apt-get install -y --no-install-recommends libjemalloc2 \
 && rm -rf /var/lib/apt/lists/* \
 && ln -s "$(ls /usr/lib/*-linux-gnu/libjemalloc.so.2 | head -n 1)" /usr/local/lib/libjemalloc.so.2
ENV LD_PRELOAD=/usr/local/lib/libjemalloc.so.2
COPY --from=build --chown=node:node /app/package.json /app/ecosystem.config.js ./
COPY --from=build --chown=node:node /app/node_modules ./node_modules
COPY --from=build --chown=node:node /app/dist ./dist
COPY --from=build --chown=node:node /app/data ./data
# PM2's home and the log spill directory (mount a volume on /app/.run/spill to keep spilled bid
# log batches across container restarts).
RUN mkdir -p /app/.run/spill && chown -R node:node /app/.run
USER node
EXPOSE 8080
# Liveness only (a wedged process does not answer); /health/ready is for load balancers.
HEALTHCHECK --interval=10s --timeout=3s --start-period=30s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:'+(process.env.PORT||8080)+'/health/live').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]
# pm2-runtime stays in the foreground, streams the workers' JSON log lines to stdout and stops them
# gracefully on SIGTERM/SIGINT (drain, final bid log flush): give `docker stop` 20 s, not 10.
# `--only bidder`: other apps of the ecosystem file (the log shipper) run in containers of their own.
CMD ["/app/node_modules/.bin/pm2-runtime", "ecosystem.config.js", "--only", "bidder"]
