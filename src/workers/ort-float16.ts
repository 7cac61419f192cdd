/**
 * onnxruntime-common represents float16 tensors as Float16Array wherever the
 * runtime has one (Node >= 24), but onnxruntime-node 1.30's native binding can
 * neither read nor fill a Float16Array ("not enough space: expected N, got 0").
 * Without the global, float16 tensors are Uint16Array bit patterns — what the
 * KServe wire format carries anyway — and that works on every Node version.
 *
 * Call this before the first onnxruntime Tensor is created, and only in a
 * thread (or test process) that uses Float16Array for nothing else: inference
 * workers run onnxruntime only.
 */
export function useUint16ArrayForFloat16(): void {
  Reflect.deleteProperty(globalThis, 'Float16Array');
}
