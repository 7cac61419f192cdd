/**
 * The deployment manifests, validated rather than just parsed:
 *
 * - every Kubernetes resource in deploy/ against the Kubernetes (and KEDA)
 *   schemas, through kubernetes-models;
 * - the KServe resources two ways: their containers as Kubernetes containers,
 *   and their KServe fields against a small JSON schema written from KServe's
 *   documented API (ServingRuntime v1alpha1, InferenceService v1beta1), since
 *   the CRD files are not reachable from here;
 * - the cross-references: every container's args parse with the real command
 *   line parser; probe paths, ports and the metric the autoscalers read are
 *   answered by a real server started with the Deployment's args; the grace
 *   period covers the drain flags; the Dockerfile agrees with all of it.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { Ajv } from 'ajv';
import { ConfigMap, Pod, Service } from 'kubernetes-models/v1';
import { Deployment } from 'kubernetes-models/apps/v1';
import { HorizontalPodAutoscaler } from 'kubernetes-models/autoscaling/v2';
import { PodDisruptionBudget } from 'kubernetes-models/policy/v1';
import { ScaledObject } from '@kubernetes-models/keda/keda.sh/v1alpha1';
import type { IContainer } from 'kubernetes-models/v1';
import { parseServeOptions } from '../../src/cli/serve-options.js';
import { METRIC } from '../../src/observability/metric-names.js';
import { PACKAGE_ROOT, startServer, type RunningServer } from './helpers/server-process.js';
import { httpGet } from './helpers/probes.js';

const DEPLOY = path.join(PACKAGE_ROOT, 'deploy');
const VERSION = (JSON.parse(readFileSync(path.join(PACKAGE_ROOT, 'package.json'), 'utf8')) as { version: string }).version;

interface Manifest {
  readonly file: string;
  readonly doc: Record<string, any>;
}

function loadManifests(dir: string): Manifest[] {
  const out: Manifest[] = [];
  for (const name of readdirSync(dir).filter((f) => f.endsWith('.yaml')).sort()) {
    const text = readFileSync(path.join(dir, name), 'utf8');
    for (const document of parseAllDocuments(text)) {
      if (document.errors.length > 0) throw new Error(`${name}: ${document.errors[0]!.message}`);
      out.push({ file: name, doc: document.toJS() as Record<string, any> });
    }
  }
  return out;
}

const kubernetes = loadManifests(path.join(DEPLOY, 'kubernetes'));
const kserve = loadManifests(path.join(DEPLOY, 'kserve'));
const byKind = (list: Manifest[], kind: string) => list.filter((m) => m.doc.kind === kind);
const deployments = byKind(kubernetes, 'Deployment');

/** The schema-checked model class of each Kubernetes kind in deploy/kubernetes. */
const MODELS: Record<string, new (data: any) => { validate(): void }> = {
  'apps/v1 Deployment': Deployment,
  'v1 Service': Service,
  'v1 ConfigMap': ConfigMap,
  'policy/v1 PodDisruptionBudget': PodDisruptionBudget,
  'autoscaling/v2 HorizontalPodAutoscaler': HorizontalPodAutoscaler,
  'keda.sh/v1alpha1 ScaledObject': ScaledObject,
};

/** A container is checked as Kubernetes checks it: inside a Pod. */
function validateContainer(container: IContainer): void {
  new Pod({ metadata: { name: 'check' }, spec: { containers: [container] } }).validate();
}

// KServe's documented fields (kserve.github.io: ServingRuntime, InferenceService),
// strict: a misspelt field fails instead of being ignored by the controller.
const stringMap = { type: 'object', additionalProperties: { type: 'string' } };
const SERVING_RUNTIME_SCHEMA = {
  type: 'object',
  required: ['apiVersion', 'kind', 'metadata', 'spec'],
  properties: {
    apiVersion: { const: 'serving.kserve.io/v1alpha1' },
    kind: { enum: ['ServingRuntime', 'ClusterServingRuntime'] },
    metadata: { type: 'object', required: ['name'], properties: { name: { type: 'string' }, annotations: stringMap, labels: stringMap } },
    spec: {
      type: 'object',
      additionalProperties: false,
      required: ['supportedModelFormats', 'containers'],
      properties: {
        annotations: stringMap,
        labels: stringMap,
        supportedModelFormats: {
          type: 'array',
          minItems: 1,
          items: {
            type: 'object',
            additionalProperties: false,
            required: ['name'],
            properties: {
              name: { type: 'string', minLength: 1 },
              version: { type: 'string' },
              autoSelect: { type: 'boolean' },
              priority: { type: 'integer', minimum: 1 },
            },
          },
        },
        protocolVersions: { type: 'array', items: { enum: ['v1', 'v2', 'grpc-v1', 'grpc-v2'] } },
        multiModel: { type: 'boolean' },
        disabled: { type: 'boolean' },
        containers: { type: 'array', minItems: 1, items: { type: 'object', required: ['name', 'image'] } },
        volumes: { type: 'array' },
        nodeSelector: stringMap,
        tolerations: { type: 'array' },
        affinity: { type: 'object' },
        imagePullSecrets: { type: 'array' },
      },
    },
  },
};
const INFERENCE_SERVICE_SCHEMA = {
  type: 'object',
  required: ['apiVersion', 'kind', 'metadata', 'spec'],
  properties: {
    apiVersion: { const: 'serving.kserve.io/v1beta1' },
    kind: { const: 'InferenceService' },
    metadata: { type: 'object', required: ['name'] },
    spec: {
      type: 'object',
      additionalProperties: false,
      required: ['predictor'],
      properties: {
        predictor: {
          type: 'object',
          required: ['model'],
          properties: {
            minReplicas: { type: 'integer', minimum: 0 },
            maxReplicas: { type: 'integer', minimum: 1 },
            model: {
              type: 'object',
              additionalProperties: false,
              required: ['modelFormat'],
              properties: {
                modelFormat: {
                  type: 'object',
                  additionalProperties: false,
                  required: ['name'],
                  properties: { name: { type: 'string' }, version: { type: 'string' } },
                },
                protocolVersion: { enum: ['v1', 'v2', 'grpc-v2'] },
                runtime: { type: 'string' },
                storageUri: { type: 'string', pattern: '^(gs|s3|pvc|https?|hdfs|webhdfs|oci|hf)://' },
                args: { type: 'array', items: { type: 'string' } },
                env: { type: 'array' },
                resources: { type: 'object' },
                ports: { type: 'array' },
              },
            },
          },
        },
        transformer: { type: 'object' },
        explainer: { type: 'object' },
      },
    },
  },
};

/** The serve options a container's args give, through the real CLI parser. */
function serveOptionsOf(container: IContainer) {
  const args = container.args ?? [];
  expect(args[0], `${container.name}: args start with the subcommand`).toBe('serve');
  return parseServeOptions(args.slice(1));
}

describe('deploy/kubernetes', () => {
  it('has every resource the issue asks for', () => {
    const kinds = kubernetes.map((m) => `${m.doc.apiVersion} ${m.doc.kind}`).sort();
    expect(kinds).toEqual(
      expect.arrayContaining([
        'apps/v1 Deployment',
        'v1 Service',
        'policy/v1 PodDisruptionBudget',
        'autoscaling/v2 HorizontalPodAutoscaler',
        'keda.sh/v1alpha1 ScaledObject',
        'v1 ConfigMap',
      ]),
    );
    expect(deployments.map((m) => m.file).sort()).toEqual(['deployment-gpu.yaml', 'deployment.yaml']);
  });

  it('validates every resource against its schema', () => {
    for (const { file, doc } of kubernetes) {
      if (doc.kind === 'Kustomization') continue;
      const Model = MODELS[`${doc.apiVersion} ${doc.kind}`];
      expect(Model, `${file}: a schema for ${doc.apiVersion} ${doc.kind}`).toBeDefined();
      expect(() => new Model!(doc).validate(), file).not.toThrow();
    }
  });

  it('rejects a broken manifest (the validation is live)', () => {
    const broken = structuredClone(deployments[0]!.doc);
    broken.spec.template.spec.containers[0].ports[0].containerPort = 'eight thousand';
    expect(() => new Deployment(broken).validate()).toThrow(/containerPort/);
  });

  it('lists in the kustomization only files that exist', () => {
    const kustomization = byKind(kubernetes, 'Kustomization')[0]!.doc;
    const files = new Set(kubernetes.map((m) => m.file));
    for (const resource of kustomization.resources as string[]) expect(files.has(resource), resource).toBe(true);
  });

  for (const { file, doc } of deployments) {
    describe(file, () => {
      const pod = doc.spec.template.spec;
      const container: IContainer = pod.containers[0];
      const options = serveOptionsOf(container);
      const portByName = new Map((container.ports ?? []).map((p) => [p.name, p.containerPort]));

      it('names its ports as the args set them', () => {
        expect(portByName.get('http')).toBe(options.httpPort);
        expect(portByName.get('grpc')).toBe(options.grpcPort);
        expect(portByName.get('metrics')).toBe(options.metricsPort);
        expect(doc.spec.template.metadata.annotations['prometheus.io/port']).toBe(String(options.metricsPort));
      });

      it('probes readiness and start-up on /v2/health/ready and liveness on /v2/health/live, on the HTTP port', () => {
        for (const probe of ['startupProbe', 'readinessProbe'] as const) {
          expect(container[probe]?.httpGet?.path, probe).toBe('/v2/health/ready');
          expect(container[probe]?.httpGet?.port, probe).toBe('http');
        }
        expect(container.livenessProbe?.httpGet?.path).toBe('/v2/health/live');
        expect(container.livenessProbe?.httpGet?.port).toBe('http');
      });

      it('gives the drain its time: grace >= drain delay + drain timeout + 10 s, and one of preStop or drain delay', () => {
        const graceS = pod.terminationGracePeriodSeconds as number;
        expect(graceS * 1000).toBeGreaterThanOrEqual(options.drainDelayMs + options.drainTimeoutMs + 10_000);
        const preStop = container.lifecycle?.preStop !== undefined;
        expect(preStop !== options.drainDelayMs > 0, 'exactly one of a preStop hook and --drain-delay covers the load balancer').toBe(true);
      });

      it('runs as the image user, with requests and limits', () => {
        expect(pod.securityContext.runAsNonRoot).toBe(true);
        expect(pod.securityContext.runAsUser).toBe(10001);
        expect(container.resources?.requests?.cpu).toBeDefined();
        expect(container.resources?.limits?.memory).toBeDefined();
        expect(container.image).toBe(file === 'deployment-gpu.yaml' ? `hotpath:${VERSION}-cuda` : `hotpath:${VERSION}`);
        if (file === 'deployment-gpu.yaml') expect(container.resources?.limits?.['nvidia.com/gpu']).toBe(1);
      });
    });
  }

  it('routes the Service to named container ports, gRPC as h2c', () => {
    const service = byKind(kubernetes, 'Service')[0]!.doc;
    const containerPorts = new Set(deployments.flatMap((m) => m.doc.spec.template.spec.containers[0].ports.map((p: any) => p.name)));
    const ports = new Map<string, any>(service.spec.ports.map((p: any) => [p.name, p]));
    expect([...ports.keys()].sort()).toEqual(['grpc', 'http', 'metrics']);
    for (const port of ports.values()) expect(containerPorts.has(port.targetPort), port.name).toBe(true);
    expect(ports.get('grpc').port).toBe(8001);
    expect(ports.get('grpc').appProtocol).toBe('kubernetes.io/h2c');
    expect(ports.get('http').port).toBe(8000);
    expect(ports.get('metrics').port).toBe(8002);
    expect(service.spec.selector).toEqual(deployments[0]!.doc.spec.selector.matchLabels);
  });

  it('autoscales on in-flight requests per pod: HPA target 5 with a 300 s scale-down window, KEDA threshold 5 activation 1', () => {
    const hpa = byKind(kubernetes, 'HorizontalPodAutoscaler')[0]!.doc;
    const metric = hpa.spec.metrics[0];
    expect(metric.type).toBe('Pods');
    expect(metric.pods.metric.name).toBe(METRIC.inflightRequests);
    expect(metric.pods.target).toEqual({ type: 'AverageValue', averageValue: '5' });
    expect(hpa.spec.behavior.scaleDown.stabilizationWindowSeconds).toBe(300);
    expect(hpa.spec.scaleTargetRef.name).toBe(deployments[0]!.doc.metadata.name);

    const keda = byKind(kubernetes, 'ScaledObject')[0]!.doc;
    const trigger = keda.spec.triggers[0];
    expect(trigger.type).toBe('prometheus');
    expect(trigger.metadata.query).toContain(METRIC.inflightRequests);
    expect(trigger.metadata.threshold).toBe('5');
    expect(trigger.metadata.activationThreshold).toBe('1');
    expect(keda.spec.scaleTargetRef.name).toBe(deployments[0]!.doc.metadata.name);

    const adapter = byKind(kubernetes, 'ConfigMap')[0]!.doc;
    const rules = (parseAllDocuments(adapter.data['config.yaml'])[0]!.toJS() as { rules: any[] }).rules;
    expect(rules.some((r) => r.seriesQuery.includes(METRIC.inflightRequests) && r.name.as === METRIC.inflightRequests)).toBe(true);
  });
});

describe('deploy/kserve', () => {
  const ajv = new Ajv({ allErrors: true, strict: false });
  const checkRuntime = ajv.compile(SERVING_RUNTIME_SCHEMA);
  const checkService = ajv.compile(INFERENCE_SERVICE_SCHEMA);
  const runtime = byKind(kserve, 'ServingRuntime')[0]!.doc;
  const service = byKind(kserve, 'InferenceService')[0]!.doc;

  it('validates the KServe fields against the documented API', () => {
    expect(checkRuntime(runtime), ajv.errorsText(checkRuntime.errors)).toBe(true);
    expect(checkService(service), ajv.errorsText(checkService.errors)).toBe(true);
    const misspelt = { ...runtime, spec: { ...runtime.spec, protocolVersion: ['v2'] } };
    expect(checkRuntime(misspelt)).toBe(false);
  });

  it('validates the runtime containers as Kubernetes containers', () => {
    for (const container of runtime.spec.containers as IContainer[]) expect(() => validateContainer(container)).not.toThrow();
    expect(() => validateContainer({ name: 'x', ports: [{ containerPort: 'http' }] } as unknown as IContainer)).toThrow(/containerPort/);
  });

  it('serves ONNX over v2 and grpc-v2 with the args KServe passes', () => {
    expect(runtime.spec.supportedModelFormats).toContainEqual(expect.objectContaining({ name: 'onnx', autoSelect: true }));
    expect(runtime.spec.protocolVersions).toEqual(['v2', 'grpc-v2']);
    const container: IContainer = runtime.spec.containers[0];
    expect(container.name).toBe('kserve-container');
    expect(container.args).toContain('--model-store=/mnt/models');
    const options = serveOptionsOf(container);
    expect(options.modelRepositories).toEqual(['/mnt/models']);
    expect(container.ports?.[0]?.containerPort).toBe(options.httpPort);
    expect(container.readinessProbe?.httpGet?.path).toBe('/v2/health/ready');
    expect(container.readinessProbe?.httpGet?.port).toBe(options.httpPort);
    expect(runtime.spec.annotations['prometheus.kserve.io/port']).toBe(String(options.metricsPort));
    // KServe leaves the pod's grace period at Kubernetes' default, 30 s.
    expect(options.drainDelayMs + options.drainTimeoutMs + 10_000).toBeLessThanOrEqual(30_000);
    expect(service.spec.predictor.model.runtime).toBe(runtime.metadata.name);
    expect(service.spec.predictor.model.modelFormat.name).toBe('onnx');
  });
});

describe('Dockerfile', () => {
  const dockerfile = readFileSync(path.join(PACKAGE_ROOT, 'Dockerfile'), 'utf8');

  it('builds in one stage and runs in another, as a non-root user, with a readiness HEALTHCHECK', () => {
    expect(dockerfile).toMatch(/^FROM .* AS build$/m);
    expect(dockerfile).toMatch(/^FROM .* AS runtime$/m);
    expect(dockerfile).toMatch(/^ARG VARIANT=cpu$/m);
    expect(dockerfile).toMatch(/nvidia\/cuda:.*-runtime-/);
    expect(dockerfile).toMatch(/^USER 10001:10001$/m);
    // The HEALTHCHECK runs deploy/docker/healthcheck.mjs, which asks /v2/health/ready on the
    // server's own HTTP port (test/e2e/docker-healthcheck.test.ts runs it).
    expect(dockerfile).toMatch(/^HEALTHCHECK .*\n?.*deploy\/docker\/healthcheck\.mjs/m);
    expect(readFileSync(path.join(PACKAGE_ROOT, 'deploy', 'docker', 'healthcheck.mjs'), 'utf8')).toMatch(/\/v2\/health\/ready/);
    expect(dockerfile).toMatch(/^EXPOSE 8000 8001 8002$/m);
  });

  it('starts the CLI the build produces, with a command line that parses', () => {
    const entry = /^ENTRYPOINT (\[.*\])$/m.exec(dockerfile);
    const cmd = /^CMD (\[.*\])$/m.exec(dockerfile);
    expect(JSON.parse(entry![1]!)).toEqual(['node', '/opt/hotpath/dist/src/cli.js']);
    const args = JSON.parse(cmd![1]!) as string[];
    expect(args[0]).toBe('serve');
    expect(parseServeOptions(args.slice(1)).modelRepositories).toEqual(['/opt/hotpath/models']);
    // The Kubernetes manifests point at the same layout.
    expect(deployments[0]!.doc.spec.template.spec.containers[0].args).toContain('--model-repository=/opt/hotpath/models');
  });
});

describe('a server started with the Deployment args', () => {
  let server: RunningServer;

  beforeAll(async () => {
    const container: IContainer = deployments.find((m) => m.file === 'deployment.yaml')!.doc.spec.template.spec.containers[0];
    // The manifest's flags as given, but for its repository (repeated roots are all served, as in
    // Triton, so this machine's repository replaces it), then free ports (a later port flag wins).
    const args = (container.args ?? []).slice(1).filter((arg) => !/^--model-(repository|store)=/.test(arg));
    expect(args.length).toBe((container.args ?? []).length - 2);
    server = await startServer(path.join(PACKAGE_ROOT, 'models'), [
      ...args,
      '--grpc-port', '0', '--http-port', '0', '--metrics-port', '0', '--drain-delay', '0',
    ]);
  }, 120_000);

  afterAll(async () => {
    await server?.stop();
  });

  it('answers the probe paths and exports the metric the autoscalers read', async () => {
    const container: IContainer = deployments[0]!.doc.spec.template.spec.containers[0];
    for (const probe of [container.startupProbe, container.readinessProbe, container.livenessProbe]) {
      const answer = await httpGet(server.httpPort, probe!.httpGet!.path!);
      expect(answer.status, probe!.httpGet!.path).toBe(200);
    }
    const metrics = await httpGet(server.metricsPort, '/metrics');
    expect(metrics.status).toBe(200);
    expect(metrics.body).toMatch(new RegExp(`^${METRIC.inflightRequests} `, 'm'));
  });
});
