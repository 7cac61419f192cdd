/**
 * The folder order of src/ (DESIGN.md's target layout, issue #19): each
 * top-level folder of src/ and each file at its root is one node, and a node
 * imports only from its own level or below. Two nodes that import each other
 * (directly or through others) form a cycle, which is refused even within a
 * level. Change the order only with the reason written in the README.
 *
 * Pure functions over an import graph, so the rule itself is unit-tested on
 * small made-up graphs; test/unit/folder-order.test.ts runs it on madge's
 * graph of src/ (static `import … from` and `export … from`, type-only
 * imports included).
 */

/** Top to bottom. A node's level is its index here. */
export const FOLDER_LEVELS: readonly (readonly string[])[] = [
  ['index.ts', 'cli.ts', 'cli'],
  ['server'],
  ['inference'],
  ['routing', 'datachecks', 'patrol', 'perf'],
  ['repository', 'security'],
  ['batching', 'executor', 'workers'],
  ['tenancy', 'observability'],
  ['tensor', 'client'],
  ['native'],
  ['common', 'protocol', 'generated'],
];

/** A file's node: its top-level folder under src/, or the file itself at the root. */
export function nodeOf(file: string): string {
  const parts = file.replace(/\\/g, '/').replace(/^src\//, '').split('/');
  return parts[0]!;
}

export function levelOf(node: string): number | undefined {
  const level = FOLDER_LEVELS.findIndex((names) => names.includes(node));
  return level < 0 ? undefined : level;
}

/** Folder-level edges from a file-level graph (file → files it imports), with one file import as the example of each. */
export function folderEdges(files: Readonly<Record<string, readonly string[]>>): Map<string, Map<string, string>> {
  const edges = new Map<string, Map<string, string>>();
  for (const [from, imports] of Object.entries(files)) {
    const a = nodeOf(from);
    for (const to of imports) {
      const b = nodeOf(to);
      if (a === b) continue;
      let out = edges.get(a);
      if (out === undefined) edges.set(a, (out = new Map()));
      if (!out.has(b)) out.set(b, `${from} → ${to}`);
    }
  }
  return edges;
}

export interface Violations {
  /** Nodes the order does not name (add them to FOLDER_LEVELS, at their level). */
  readonly unplaced: string[];
  /** Imports from a higher level, one example file import each. */
  readonly upward: string[];
  /** Strongly connected sets of more than one node. */
  readonly cycles: string[][];
}

export function folderViolations(files: Readonly<Record<string, readonly string[]>>): Violations {
  const edges = folderEdges(files);
  const nodes = new Set<string>(Object.keys(files).map(nodeOf));
  for (const out of edges.values()) for (const b of out.keys()) nodes.add(b);
  const unplaced = [...nodes].filter((node) => levelOf(node) === undefined).sort();
  const upward: string[] = [];
  for (const [a, out] of edges) {
    for (const [b, example] of out) {
      const la = levelOf(a);
      const lb = levelOf(b);
      if (la !== undefined && lb !== undefined && lb < la) upward.push(`${a} (level ${la + 1}) imports ${b} (level ${lb + 1}): ${example}`);
    }
  }
  return { unplaced, upward: upward.sort(), cycles: stronglyConnected(nodes, edges) };
}

/** Tarjan's algorithm; the components of more than one node, each sorted. */
function stronglyConnected(nodes: ReadonlySet<string>, edges: ReadonlyMap<string, ReadonlyMap<string, string>>): string[][] {
  let counter = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const components: string[][] = [];
  const visit = (v: string): void => {
    index.set(v, counter);
    low.set(v, counter);
    counter += 1;
    stack.push(v);
    onStack.add(v);
    for (const w of edges.get(v)?.keys() ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) {
        low.set(v, Math.min(low.get(v)!, index.get(w)!));
      }
    }
    if (low.get(v) === index.get(v)) {
      const component: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        component.push(w);
      } while (w !== v);
      if (component.length > 1) components.push(component.sort());
    }
  };
  for (const node of [...nodes].sort()) if (!index.has(node)) visit(node);
  return components;
}
