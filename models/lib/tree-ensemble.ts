// A synthetic gradient-boosted tree ensemble, shaped like what LightGBM exports through
// onnxmltools: binary trees of BRANCH_LEQ splits, leaf values summed over all trees
// plus a base value (aggregate_function SUM, one target), emitted as a single
// ai.onnx.ml TreeEnsembleRegressor node.
//
// The trees are random but not noise. A hidden linear "true logit" (one coefficient
// per feature) drives them: split features are drawn in proportion to how much they
// matter, and each leaf's value is a small step in the direction that logit would
// move along the path taken to reach it. Summed over ~100 trees that gives a smooth,
// input-dependent score, so the sigmoid probability varies across inputs instead of
// sitting at one value.

import { TensorProto_DataType } from '../../src/generated/onnx/onnx_pb.js';
import {
  attrFloats,
  attrInt,
  attrInts,
  attrString,
  attrStrings,
  node,
  ONNX_ML_OPSET,
  ONNX_OPSET,
  tensorValueInfo,
  type GraphSpec,
} from './onnx-builder.js';
import type { SeededRandom } from './seeded-random.js';

/** An internal node: go to `trueId` when x[featureId] <= threshold, else `falseId`. */
export interface SplitNode {
  readonly kind: 'split';
  readonly featureId: number;
  /** Already rounded to float32, as stored in the model. */
  readonly threshold: number;
  readonly trueId: number;
  readonly falseId: number;
}

export interface LeafNode {
  readonly kind: 'leaf';
  /** Already rounded to float32, as stored in the model. */
  readonly value: number;
}

/** One tree; `nodes[id]` is the node with that id, root is id 0. */
export type Tree = ReadonlyArray<SplitNode | LeafNode>;

export interface TreeEnsemble {
  readonly nFeatures: number;
  /** Added once to the sum of leaf values (float32-rounded). */
  readonly baseValue: number;
  readonly trees: readonly Tree[];
}

export interface TreeEnsembleInit {
  nFeatures: number;
  nTrees: number;
  maxDepth: number;
  /** Shrinkage applied to each leaf step, like a boosting learning rate. */
  learningRate: number;
  baseValue: number;
}

/** Seeded ensemble; see the file header for how the values are chosen. */
export function initTreeEnsemble(rng: SeededRandom, init: TreeEnsembleInit): TreeEnsemble {
  // Hidden coefficients: a few strong features, the rest weak, as in real fraud data.
  const coef = Array.from({ length: init.nFeatures }, (_, f) => (f % 4 === 0 ? 1 : 0.25) * rng.uniform(-1, 1));
  const totalWeight = coef.reduce((a, c) => a + Math.abs(c), 0);
  const pickFeature = (): number => {
    let r = rng.next() * totalWeight;
    for (let f = 0; f < coef.length; f++) {
      r -= Math.abs(coef[f]!);
      if (r < 0) return f;
    }
    return coef.length - 1;
  };

  const trees: Tree[] = [];
  for (let t = 0; t < init.nTrees; t++) {
    const nodes: Array<SplitNode | LeafNode> = [];
    // Breadth-first, so node ids start at 0 and increase by one, as the spec requires.
    // Each queue entry carries the path's accumulated logit step.
    const queue: Array<{ id: number; depth: number; step: number }> = [{ id: 0, depth: 0, step: 0 }];
    let nextId = 1;
    while (queue.length > 0) {
      const { id, depth, step } = queue.shift()!;
      // Leaf-wise growth stops some branches early; the first two levels always split.
      const split = depth < init.maxDepth && (depth < 2 || rng.next() < 0.8);
      if (!split) {
        const noise = rng.uniform(-0.3, 0.3);
        nodes[id] = { kind: 'leaf', value: Math.fround(init.learningRate * (step + noise)) };
        continue;
      }
      const featureId = pickFeature();
      // Thresholds near the centre of a unit-variance feature, so both branches are hit.
      const threshold = Math.fround(0.7 * rng.normal());
      const trueId = nextId++;
      const falseId = nextId++;
      nodes[id] = { kind: 'split', featureId, threshold, trueId, falseId };
      // Low side (x <= threshold) steps against the coefficient, high side with it.
      const c = coef[featureId]!;
      queue.push({ id: trueId, depth: depth + 1, step: step - c });
      queue.push({ id: falseId, depth: depth + 1, step: step + c });
    }
    trees.push(nodes);
  }
  return { nFeatures: init.nFeatures, baseValue: Math.fround(init.baseValue), trees };
}

export interface TreeGraphOptions {
  name: string;
  doc: string;
  inputName: string;
  outputName: string;
}

/**
 * features [batch, F] -> TreeEnsembleRegressor (raw score [batch, 1]) -> Sigmoid.
 * The Sigmoid is a separate node (rather than post_transform LOGISTIC) to mirror a
 * converter that exports the raw booster and appends the link function.
 */
export function treeEnsembleGraph(ensemble: TreeEnsemble, opts: TreeGraphOptions): GraphSpec {
  const treeIds: number[] = [];
  const nodeIds: number[] = [];
  const featureIds: number[] = [];
  const modes: string[] = [];
  const values: number[] = [];
  const trueIds: number[] = [];
  const falseIds: number[] = [];
  const targetTreeIds: number[] = [];
  const targetNodeIds: number[] = [];
  const targetWeights: number[] = [];
  for (const [t, tree] of ensemble.trees.entries()) {
    for (const [id, n] of tree.entries()) {
      treeIds.push(t);
      nodeIds.push(id);
      if (n.kind === 'split') {
        featureIds.push(n.featureId);
        modes.push('BRANCH_LEQ');
        values.push(n.threshold);
        trueIds.push(n.trueId);
        falseIds.push(n.falseId);
      } else {
        // Leaves carry placeholders in the node tuples; their value is a target entry.
        featureIds.push(0);
        modes.push('LEAF');
        values.push(0);
        trueIds.push(0);
        falseIds.push(0);
        targetTreeIds.push(t);
        targetNodeIds.push(id);
        targetWeights.push(n.value);
      }
    }
  }
  const regressor = node('TreeEnsembleRegressor', [opts.inputName], ['raw_score'], {
    domain: ONNX_ML_OPSET.domain,
    attributes: [
      attrString('aggregate_function', 'SUM'),
      attrFloats('base_values', [ensemble.baseValue]),
      attrInt('n_targets', 1),
      attrInts('nodes_falsenodeids', falseIds),
      attrInts('nodes_featureids', featureIds),
      attrStrings('nodes_modes', modes),
      attrInts('nodes_nodeids', nodeIds),
      attrInts('nodes_treeids', treeIds),
      attrInts('nodes_truenodeids', trueIds),
      attrFloats('nodes_values', values),
      attrString('post_transform', 'NONE'),
      attrInts('target_ids', targetTreeIds.map(() => 0)),
      attrInts('target_nodeids', targetNodeIds),
      attrInts('target_treeids', targetTreeIds),
      attrFloats('target_weights', targetWeights),
    ],
  });
  return {
    name: opts.name,
    doc: opts.doc,
    inputs: [tensorValueInfo(opts.inputName, TensorProto_DataType.FLOAT, ['batch', ensemble.nFeatures])],
    outputs: [tensorValueInfo(opts.outputName, TensorProto_DataType.FLOAT, ['batch', 1])],
    nodes: [regressor, node('Sigmoid', ['raw_score'], [opts.outputName])],
    opsets: [ONNX_OPSET, ONNX_ML_OPSET],
  };
}
