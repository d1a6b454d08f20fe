/**
 * Types of `@opentelemetry/semantic-conventions/incubating` (the experimental names, `gen_ai.*` among them), which
 * the package declares only in its package.json `exports`: `moduleResolution: node` does not read those. The types
 * are the package's own, re-exported from the file its `exports` names; Node resolves the import itself.
 */
declare module "@opentelemetry/semantic-conventions/incubating" {
  export * from "@opentelemetry/semantic-conventions/build/src/index-incubating";
}
