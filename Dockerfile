# syntax=docker/dockerfile:1
# cronflock's image: one replica per container; run as many as you like against one Redis.
#   docker build -t cronflock .
#   docker run -e REDIS_URL=redis://redis:6379 -v "$PWD/schedules:/app/schedules:ro" cronflock start schedules/
# test/deploy/dockerfile.test.ts runs every RUN, COPY, CMD and HEALTHCHECK of this file in a scratch folder, so a
# broken recipe fails CI even on machines without a Docker engine. Keep RUN lines to commands that run there.

# Node 24 (the Active LTS) on Debian 13 slim: the Node major that .ci/run tests the suite on (.ci/install-node.sh);
# test/deploy/dockerfile.test.ts keeps the two in step.
# ---- build: full dependencies, compile TypeScript to dist/ -----------------------------------------------------
FROM node:24-trixie-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
# --ignore-scripts: `prepare` builds dist/, and the sources are not copied yet (this layer caches the install).
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY runner ./runner
COPY jobs ./jobs
COPY k8s ./k8s
COPY bench ./bench
COPY receiver ./receiver
RUN npm run build

# ---- runtime: production dependencies only, non-root, read-only friendly --------------------------------------
FROM node:24-trixie-slim AS runtime
ENV NODE_ENV=production \
    CRONFLOCK_ADMIN=0.0.0.0:9464
WORKDIR /app
COPY package.json package-lock.json ./
# --ignore-scripts: `prepare` would run tsc, a dev dependency; dist/ comes from the build stage.
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund && npm cache clean --force
COPY --from=build /app/dist ./dist
COPY bin ./bin
COPY schema ./schema
COPY examples ./examples
# .cronflock/ is where the example module job writes; a named volume mounted here starts owned by `node`.
RUN mkdir -p .cronflock && chown node:node .cronflock
# The `node` user (uid 1000) of the official image; Kubernetes' runAsNonRoot needs the numeric id.
USER 1000:1000
EXPOSE 9464
# /healthz on the admin port (CRONFLOCK_ADMIN above); the slim image has no curl, node's fetch does it.
HEALTHCHECK --interval=10s --timeout=3s --start-period=20s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:9464/healthz').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]
# Exec form: node is PID 1 and gets SIGTERM itself (cronflock handles SIGTERM and SIGINT: runs finish within
# --grace, then hand over). Give the container a stop timeout longer than --grace (compose stop_grace_period,
# Kubernetes terminationGracePeriodSeconds).
ENTRYPOINT ["node", "bin/cronflock.js"]
CMD ["start", "examples/"]
