#!/usr/bin/env bash
# Runs the NestJS tests (test/nestjs) against an older Nest major: 10, the oldest supported, by
# default. The dev dependencies hold the newest major (12); this installs the other one's packages
# into node_modules/.cache/nest-compat/<major> (once; only the npm registry is needed) and points
# @nestjs/* there through a vitest alias (NEST_MODULES), sharing this project's single rxjs,
# reflect-metadata, ioredis and graphql, as an application would.
#
#   scripts/nest-compat.sh [10|11] [vitest args…]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
major=${1:-10}
shift || true
# (per major: @nestjs/config's and the GraphQL driver's matching majors; Apollo Server 4 serves
# Express 4 by itself, 5 needs the Express 5 integration)
case "$major" in
  10) config=3; graphql=(@nestjs/graphql@^12 @nestjs/apollo@^12 @apollo/server@^4) ;;
  11) config=4; graphql=(@nestjs/graphql@^13 @nestjs/apollo@^13 @apollo/server@^5 @as-integrations/express5@^1) ;;
  *) echo "nest-compat: unsupported Nest major '$major' (10 or 11; 12 is the dev dependency)" >&2; exit 2 ;;
esac
dir=${NEST_COMPAT_DIR:-$root/node_modules/.cache/nest-compat/$major}
packages=(
  "@nestjs/common@^$major" "@nestjs/core@^$major" "@nestjs/platform-express@^$major" "@nestjs/platform-fastify@^$major"
  "@nestjs/testing@^$major" "@nestjs/microservices@^$major" "@nestjs/config@^$config" "@nestjs/schedule@^6" "${graphql[@]}"
)
stamp="$dir/.installed-$(echo "${packages[*]}" | cksum | cut -d' ' -f1)"
if [ ! -f "$stamp" ]; then
  rm -rf "$dir" && mkdir -p "$dir"
  echo '{ "private": true }' > "$dir/package.json"
  # --legacy-peer-deps: no second rxjs / reflect-metadata (linked below), no optional transports
  (cd "$dir" && npm install --silent --no-audit --no-fund --no-package-lock --legacy-peer-deps "${packages[@]}")
  touch "$stamp"
fi
# (one graphql too: a schema built by one copy is refused by another)
for dep in rxjs reflect-metadata ioredis graphql; do
  rm -rf "${dir:?}/node_modules/$dep"
  ln -s "$root/node_modules/$dep" "$dir/node_modules/$dep"
done
echo "nest-compat: @nestjs/core $(node -p "require('$dir/node_modules/@nestjs/core/package.json').version"), @nestjs/platform-fastify $(node -p "require('$dir/node_modules/@nestjs/platform-fastify/package.json').version")"
cd "$root"
NEST_MODULES="$dir/node_modules" exec npx vitest run test/nestjs "$@"
