/**
 * The folder order of src/ (test/layering/folder-order.ts) holds: no folder
 * imports a higher one and no folders import each other in a cycle. The rule
 * itself is checked on small graphs first, so a pass on src/ means something.
 */
import { describe, expect, it } from 'vitest';
import madge from 'madge';
import { folderViolations } from '../layering/folder-order.js';

describe('the folder-order rule', () => {
  it('accepts imports downward and within a folder', () => {
    const graph = {
      'server/a.ts': ['server/b.ts', 'inference/c.ts', 'common/d.ts'],
      'server/b.ts': [],
      'inference/c.ts': ['common/d.ts'],
      'common/d.ts': [],
    };
    expect(folderViolations(graph)).toEqual({ unplaced: [], upward: [], cycles: [] });
  });

  it('names an upward import with the file import behind it', () => {
    const graph = { 'native/a.ts': ['observability/b.ts'], 'observability/b.ts': [] };
    expect(folderViolations(graph).upward).toEqual(['native (level 9) imports observability (level 7): native/a.ts → observability/b.ts']);
  });

  it('finds a cycle between folders of one level, and through several', () => {
    const sameLevel = { 'routing/a.ts': ['datachecks/b.ts'], 'datachecks/b.ts': ['routing/c.ts'], 'routing/c.ts': [] };
    expect(folderViolations(sameLevel).cycles).toEqual([['datachecks', 'routing']]);
    const longer = { 'tenancy/a.ts': ['observability/b.ts'], 'observability/b.ts': ['tenancy/c.ts'], 'tenancy/c.ts': [], 'server/x.ts': ['tenancy/a.ts'] };
    expect(folderViolations(longer).cycles).toEqual([['observability', 'tenancy']]);
  });

  it('names a folder the order does not place', () => {
    expect(folderViolations({ 'newthing/a.ts': ['common/b.ts'], 'common/b.ts': [] }).unplaced).toEqual(['newthing']);
  });
});

describe('src/', () => {
  it('has no upward folder import, no folder cycle and no unplaced folder', async () => {
    // Static imports and re-exports, type-only ones included (madge's default).
    const result = await madge('src', { fileExtensions: ['ts'], tsConfig: 'tsconfig.json' });
    const violations = folderViolations(result.obj());
    expect(violations, JSON.stringify(violations, null, 2)).toEqual({ unplaced: [], upward: [], cycles: [] });
  });
});
