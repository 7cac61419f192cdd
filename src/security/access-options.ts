/**
 * The admission flags (options table, common/option-table.ts):
 * `--require-api-key`, `--admin-tenant` and Triton's restricted groups. They
 * are checked together with the tenants file's keys (doorGates), for the
 * command line and createServer alike, so a bad combination stops start-up
 * naming the flag. A restriction's message names its group or header key,
 * never its value.
 */
import { booleanFlag, UsageError } from '../common/flag-values.js';
import { isBoolean, option, type OptionEntry } from '../common/option-table.js';
import type { TenantKey } from '../tenancy/tenant-config.js';
import { AccessSettingsError, doorGates } from './caller.js';
import { RestrictedApiSpecError } from './restricted-api.js';

export interface AccessOptions {
  /** `--require-api-key`: calls carry a tenant's key and see only its models (security/caller.ts). */
  requireApiKey: boolean;
  /** `--admin-tenant`: the tenant whose keys see every model and may load and unload. */
  adminTenant: string | undefined;
  /** `--grpc-restricted-protocol` values, Triton's `<group>[,<group>...]:<key>=<value>`. */
  grpcRestrictedProtocol: readonly string[];
  /** `--http-restricted-api` values. */
  httpRestrictedApi: readonly string[];
}

const list = (raw: unknown): string[] => (raw === undefined ? [] : [...(raw as readonly string[])]);

export const ACCESS_OPTIONS: readonly OptionEntry<object>[] = [
  option({
    flag: 'require-api-key', field: 'requireApiKey', default: false,
    help: "every call but the health probes carries 'authorization: Bearer KEY' of a tenant in --tenants-file, and sees only that tenant's models (default false)",
    parse: (raw, name) => booleanFlag(name, raw, false),
    check: isBoolean,
  }),
  option({
    flag: 'admin-tenant', field: 'adminTenant', arg: 'NAME', default: undefined as string | undefined,
    help: 'with --require-api-key: the tenant whose keys see every model and may load and unload (nobody may without it)',
    parse: (raw, name) => {
      if (raw === '') throw new UsageError(`${name}: expected a tenant name, got ''`);
      return raw;
    },
    check: (value) => (value === '' ? 'expected a tenant name' : undefined),
  }),
  {
    flags: [
      { name: 'grpc-restricted-protocol', arg: 'GROUPS:KEY=VALUE', repeatable: true, triton: true,
        help: 'gRPC calls of GROUPS (comma-separated: health, metadata, inference, shared-memory, model-config, model-repository, statistics, trace, logging) need the header triton-grpc-protocol-KEY: VALUE (repeatable)' },
      { name: 'http-restricted-api', arg: 'GROUPS:KEY=VALUE', repeatable: true, triton: true, help: 'the same on HTTP, with the header KEY: VALUE (repeatable)' },
    ],
    defaults: () => ({ grpcRestrictedProtocol: [], httpRestrictedApi: [] }),
    parse: (values) => ({
      ...(values['grpc-restricted-protocol'] === undefined ? {} : { grpcRestrictedProtocol: list(values['grpc-restricted-protocol']) }),
      ...(values['http-restricted-api'] === undefined ? {} : { httpRestrictedApi: list(values['http-restricted-api']) }),
    }),
    // Every access setting together, with the tenants file's keys.
    check: (options: AccessOptions & { apiKeys: readonly TenantKey[] }) => {
      try {
        doorGates(options);
      } catch (err) {
        if (err instanceof AccessSettingsError || err instanceof RestrictedApiSpecError) throw new UsageError(err.message);
        throw err;
      }
    },
    fields: { 'grpc-restricted-protocol': 'grpcRestrictedProtocol', 'http-restricted-api': 'httpRestrictedApi' },
  },
];
