// The benchmark registry: `npm run bench -- <name>` runs suites[name].
// Add a suite by writing bench/suites/<name>.ts (a BenchSuite) and listing it
// here.
import { arenaSuite } from './arena.js';
import { datachecksSuite } from './datachecks.js';
import { gpuSuite } from './gpu.js';
import { patrolSuite } from './patrol.js';
import { routesSuite } from './routes.js';
import { serveSuite } from './serve.js';
import type { BenchSuite } from './suite.js';
import { targetsSuite } from './targets.js';

export const suites: ReadonlyMap<string, BenchSuite> = new Map([arenaSuite, serveSuite, patrolSuite, gpuSuite, routesSuite, datachecksSuite, targetsSuite].map((suite) => [suite.name, suite]));
