/**
 * Which executor a version runs on (repository/native-loader.ts
 * selectExecutor): the config's wish against the server's device. The
 * ledgers here are stand-ins carrying only the two fields selection reads
 * (whether the device ledger is on CUDA and its ordinal, or why there is
 * none), so the CUDA cases run on a machine without a GPU.
 */
import { describe, expect, it } from 'vitest';
import { parseModelConfigText } from '../../src/repository/model-config.js';
import { selectExecutor } from '../../src/repository/native-loader.js';
import type { ServerMemory } from '../../src/tenancy/server-memory.js';

const FILE = 'models/m/config.pbtxt';
const config = (text: string) => parseModelConfigText(`name: "m"\n${text}`, FILE).config;
const onCuda = (ordinal: number) => ({ device: { backend: 'cuda', ordinal }, deviceUnavailableReason: '' }) as unknown as ServerMemory;
const noDevice = { device: undefined, deviceUnavailableReason: 'no usable CUDA device 0: host memory (no driver)' } as unknown as ServerMemory;
const hostLedger = { device: { backend: 'host', ordinal: 0 }, deviceUnavailableReason: '' } as unknown as ServerMemory;
const GPU = 'instance_group [ { kind: KIND_GPU } ]';
const NATIVE = 'parameters { key: "executor" value: { string_value: "native" } }';

describe('executor selection', () => {
  it('runs KIND_CPU and unconfigured models on onnxruntime, with no note', () => {
    expect(selectExecutor(config('instance_group [ { kind: KIND_CPU } ]'), onCuda(0), FILE, undefined)).toEqual({
      native: false, device: 'host', forced: false, note: '',
    });
    expect(selectExecutor(undefined, onCuda(0), FILE, undefined).native).toBe(false);
  });

  it('runs KIND_GPU on the executor on a CUDA device, and says why not otherwise', () => {
    expect(selectExecutor(config(GPU), onCuda(0), FILE, undefined)).toEqual({ native: true, device: 'cuda', forced: false, note: '' });
    expect(selectExecutor(config(GPU), noDevice, FILE, undefined).note).toBe(
      'KIND_GPU requested, running on onnxruntime (CPU): no usable CUDA device 0: host memory (no driver)',
    );
    expect(selectExecutor(config(GPU), hostLedger, FILE, undefined).note).toMatch(/backed by host memory \(test hook\)/);
    expect(selectExecutor(config(GPU), onCuda(0), FILE, 'illegal address').note).toMatch(
      /the CUDA device was lost earlier in this process \(illegal address\)/,
    );
  });

  it('honours the gpus a KIND_GPU group lists', () => {
    const pinned = config('instance_group [ { kind: KIND_GPU gpus: [ 1, 2 ] } ]');
    expect(selectExecutor(pinned, onCuda(2), FILE, undefined).native).toBe(true);
    expect(selectExecutor(pinned, onCuda(0), FILE, undefined)).toMatchObject({
      native: false,
      note: 'KIND_GPU requested, running on onnxruntime (CPU): instance_group lists gpus [1, 2], but this server drives device 0 (--device)',
    });
  });

  it('forces the executor with executor: native (host kernels without a usable device) and onnxruntime with executor: onnxruntime', () => {
    expect(selectExecutor(config(NATIVE), onCuda(0), FILE, undefined)).toEqual({ native: true, device: 'cuda', forced: true, note: '' });
    expect(selectExecutor(config(NATIVE), noDevice, FILE, undefined)).toEqual({ native: true, device: 'host', forced: true, note: '' });
    expect(selectExecutor(config(NATIVE), onCuda(0), FILE, 'lost')).toMatchObject({ native: true, device: 'host' });
    const ort = config(`${GPU}\nparameters { key: "executor" value: { string_value: "onnxruntime" } }`);
    expect(selectExecutor(ort, onCuda(0), FILE, undefined)).toEqual({ native: false, device: 'host', forced: false, note: '' });
  });

  it('refuses any other executor parameter, naming the value', () => {
    const bad = config('parameters { key: "executor" value: { string_value: "tensorrt" } }');
    expect(() => selectExecutor(bad, onCuda(0), FILE, undefined)).toThrow(
      /parameter 'executor': expected "native" or "onnxruntime", got "tensorrt"/,
    );
  });
});
