/**
 * Routes-file text → the routes a server serves: the phase-1 checks (schema,
 * field rules, every model of a route fits its inputs and outputs) against
 * the live model registry, plus the server's own rules:
 *   - a route name may not be the name of a model in the repository (loaded
 *     or not: a client could no longer reach that model);
 *   - with --require-api-key, a route belongs to its arms' tenant, and every
 *     model it names (arms, shadow, fallback model) must belong to that one
 *     tenant, so routing never carries a tenant's traffic to another's model.
 * Any problem refuses the whole file (RoutesFileError naming each).
 */
import type { ModelManager } from '../../repository/model-manager.js';
import type { ModelVersion } from '../../repository/model-version.js';
import { externalShape } from '../../tensor/model-signature.js';
import { checkRouteCompatibility, type ModelSignature, type SignatureLookup } from '../../routing/route-compatibility.js';
import type { RouteConfig } from '../../routing/routes-config.js';
import { parseRoutesText, RoutesFileError, type RoutesProblem } from '../../routing/routes-file.js';
import { RouteTable, type RoutingEvent } from '../../routing/route-table.js';

/** A route's place in the server: who may see it. */
export interface RouteInfo {
  /** The stable arm's model's tenant at load; what `visibleTo` checks. */
  readonly tenant: string;
}

/** The routes of one routes-file text. */
export interface LoadedRoutes {
  readonly table: RouteTable;
  readonly info: ReadonlyMap<string, RouteInfo>;
  /** Epoch ms of the build. */
  readonly loadedAt: number;
}

export interface RouteBuildOptions {
  readonly models: ModelManager;
  /** --require-api-key: every model of a route must share its tenant. */
  readonly tenantScoped: boolean;
  readonly onEvent: (event: RoutingEvent) => void;
}

/** The ready version a route names (`version` undefined: the version policy's); undefined when there is none. */
export function readyVersion(models: ModelManager, model: string, version: number | undefined): ModelVersion | undefined {
  try {
    const resolved = models.resolve(model, version === undefined ? '' : String(version));
    return resolved.state === 'READY' ? resolved : undefined;
  } catch {
    return undefined;
  }
}

/** The registry as route-compatibility.ts reads it: a ready version's ModelMetadata inputs and outputs. */
export function signatureLookup(models: ModelManager): SignatureLookup {
  return (model, version) => {
    const resolved = readyVersion(models, model, version);
    if (resolved === undefined) return undefined;
    const signature = resolved.signature;
    const tensor = (spec: (typeof signature.inputs)[number]) => ({
      name: spec.name,
      datatype: spec.datatype,
      shape: externalShape(signature, spec),
    });
    return { inputs: signature.inputs.map(tensor), outputs: signature.outputs.map(tensor) } satisfies ModelSignature;
  };
}

/** Builds the routes from the file's text; throws RoutesFileError naming every problem. */
export function buildRoutes(text: string, source: string, options: RouteBuildOptions): LoadedRoutes {
  const config = parseRoutesText(text, source);
  const problems: RoutesProblem[] = [];
  for (const name of config.routes.keys()) {
    // A model that is in the repository but not loaded has no signature: the compatibility check would miss it.
    if (options.models.isKnown(name) && readyVersion(options.models, name, undefined) === undefined) {
      problems.push({ route: name, field: '', message: `expected a name no model has, got '${name}', which is also a model in the repository` });
    }
  }
  const { signatures, problems: fit } = checkRouteCompatibility(config, signatureLookup(options.models));
  problems.push(...fit);
  const info = new Map<string, RouteInfo>();
  for (const route of config.routes.values()) {
    const tenants = routeTenants(route, options.models);
    const stable = route.arms.find((arm) => arm.name === route.stableArm)!;
    const tenant = tenants.get(`arms.${stable.name}`);
    if (tenant === undefined) continue; // not loaded: the compatibility check reported it
    info.set(route.name, { tenant });
    if (!options.tenantScoped) continue;
    const others = [...tenants].filter(([, t]) => t !== tenant);
    if (others.length > 0) {
      problems.push({
        route: route.name,
        field: others[0]![0],
        message:
          `expected every model of the route in one tenant (a route belongs to its arms' tenant, '${tenant}' ` +
          `of the stable arm '${stable.name}'), got ${others.map(([field, t]) => `${field} in tenant '${t}'`).join(', ')}`,
      });
    }
  }
  if (problems.length > 0) throw new RoutesFileError(source, problems);
  const table = new RouteTable(config, { signatures, onEvent: options.onEvent });
  return { table, info, loadedAt: Date.now() };
}

/** The tenant of each loaded model a route names, keyed by its field (`arms.canary`, `shadow`, `fallback`). */
function routeTenants(route: RouteConfig, models: ModelManager): Map<string, string> {
  const named: [string, string, number | undefined][] = route.arms.map((arm) => [`arms.${arm.name}`, arm.model, arm.version]);
  if (route.shadow !== undefined) named.push(['shadow', route.shadow.model, route.shadow.version]);
  if (route.fallback?.kind === 'model') named.push(['fallback', route.fallback.model, route.fallback.version]);
  const tenants = new Map<string, string>();
  for (const [field, model, version] of named) {
    const resolved = readyVersion(models, model, version);
    if (resolved !== undefined) tenants.set(field, resolved.tenant);
  }
  return tenants;
}
