# syntax=docker/dockerfile:1
# memgate: multi-stage build on Node 24, the Active LTS line (supported until April 2028; Node 20 left upstream
# support in April 2026). package.json's engines still admit 20.19+ and 22 LTS (docs/configuration.md#nodejs-versions).
# Not buildable on the development machines (no Docker engine there): keep it in step with package.json by hand;
# test/ops/compose.test.ts checks its stages, their Node line against engines, `npm ci --omit=dev` for the runtime,
# the non-root user, the HEALTHCHECK and the files it copies. docker-compose.yml builds `runtime`.

# --- build: compile TypeScript (needs dev dependencies and the toolchain for the re2 addon) ---
FROM node:24-bookworm-slim AS build
WORKDIR /app
RUN apt-get update && apt-get install -y --no-install-recommends python3 make g++ && rm -rf /var/lib/apt/lists/*
COPY package.json package-lock.json ./
# --ignore-scripts: `prepare` (tsc) needs the sources, copied below; re2 is rebuilt explicitly.
RUN npm ci --ignore-scripts && npm rebuild re2
# Everything `npm run build` reads: the server's and the playground's (src/ui → dist/ui) TypeScript configs, the
# sources, and the step that copies the playground's HTML and CSS.
COPY tsconfig.json tsconfig.build.json tsconfig.ui.json ./
COPY scripts/copy-ui.js ./scripts/copy-ui.js
COPY src ./src
RUN npm run build

# --- deps: production dependencies only, with the re2 native addon compiled ---
FROM node:24-bookworm-slim AS deps
WORKDIR /app
RUN apt-get update && apt-get install -y --no-install-recommends python3 make g++ && rm -rf /var/lib/apt/lists/*
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --ignore-scripts && npm rebuild re2 && npm cache clean --force

# --- runtime: no compiler, no dev dependencies, non-root ---
FROM node:24-bookworm-slim AS runtime
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    PORT=8787 \
    MEMGATE_POLICY_DIR=/app/policies \
    MEMGATE_LOCAL_DATA=/app/config/demo-memories.jsonl
WORKDIR /app
COPY --from=deps --chown=node:node /app/node_modules ./node_modules
COPY --from=build --chown=node:node /app/dist ./dist
COPY --chown=node:node package.json ./
COPY --chown=node:node bin ./bin
COPY --chown=node:node policies ./policies
COPY --chown=node:node config ./config
USER node
EXPOSE 8787
# HOST=0.0.0.0 needs a tenants file (dev mode only listens on loopback): mount one at /app/config/tenants.yaml
# or set MEMGATE_TENANTS_FILE.
HEALTHCHECK --interval=15s --timeout=3s --start-period=10s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:'+(process.env.PORT||8787)+'/healthz').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]
STOPSIGNAL SIGTERM
# node itself as PID 1's command, not `npm start`: the SIGTERM of `docker stop` reaches the gateway directly, which
# drains and exits 0 (npm adds a process and a shell in between; docs/configuration.md#nodejs-versions).
CMD ["node", "bin/memgate.js", "serve"]
