/**
 * The routes' flags (options table, common/option-table.ts). The routes file
 * is read and validated before anything starts (YAML, schema, the rules
 * between fields), for the command line and createServer alike, so a
 * malformed file stops start-up; whether its models fit is checked once they
 * are loaded (HotpathServer.loadModels).
 */
import path from 'node:path';
import { integerFlag, UsageError } from '../common/flag-values.js';
import { integerIn, option, type OptionEntry } from '../common/option-table.js';
import { readRoutesFile, RoutesFileError } from './routes-file.js';

export interface RoutesOptions {
  /** `--routes`: the routes file (absolute); undefined: no routes. */
  routesFile: string | undefined;
  /** `--shadow-queue-size`: shadow requests waiting, at most. */
  shadowQueueSize: number;
  /** `--shadow-concurrency`: shadow requests running at once, at most. */
  shadowConcurrency: number;
}

export const ROUTES_OPTIONS: readonly OptionEntry<object>[] = [
  option({
    flag: 'routes', field: 'routesFile', arg: 'FILE', default: undefined as string | undefined,
    help: 'routes (YAML; README, Rollouts): virtual model names with canary, A/B, shadow, circuit breakers and rollback. Checked against the loaded models at start-up (an invalid file exits 2); reloaded when it changes and on SIGHUP (an invalid file is logged and the current routes stay)',
    parse: (raw, name) => {
      if (raw === '') throw new UsageError(`${name}: expected a routes file, got ''`);
      return path.resolve(raw);
    },
  }),
  {
    flags: [],
    defaults: () => ({}),
    parse: () => ({}),
    check: (o: Pick<RoutesOptions, 'routesFile'>, name) => {
      if (o.routesFile === undefined) return;
      try {
        readRoutesFile(o.routesFile);
      } catch (err) {
        if (err instanceof RoutesFileError) throw new UsageError(`${name('routesFile')}: ${err.message}`);
        throw err;
      }
    },
  },
  option({
    flag: 'shadow-queue-size', field: 'shadowQueueSize', arg: 'N', default: 256,
    help: 'shadow requests waiting, all routes together (default 256); beyond it they are dropped and counted',
    parse: (raw, name) => integerFlag(name, raw, 1, 1_000_000),
    check: integerIn(1, 1_000_000),
  }),
  option({
    flag: 'shadow-concurrency', field: 'shadowConcurrency', arg: 'N', default: 2,
    help: 'shadow requests running at once (default 2)',
    parse: (raw, name) => integerFlag(name, raw, 1, 1024),
    check: integerIn(1, 1024),
  }),
];
