/// <reference path="./interfaces/reconciler-guest-facts.d.ts" />
/// <reference path="./interfaces/reconciler-guest-reconciler.d.ts" />
/// <reference path="./interfaces/reconciler-guest-types.d.ts" />
declare module 'reconciler:guest/guest@0.4.0' {
  export type * as ReconcilerGuestFacts040 from 'reconciler:guest/facts@0.4.0'; // import reconciler:guest/facts@0.4.0
  export type * as ReconcilerGuestTypes040 from 'reconciler:guest/types@0.4.0'; // import reconciler:guest/types@0.4.0
  export * as reconciler from 'reconciler:guest/reconciler@0.4.0'; // export reconciler:guest/reconciler@0.4.0
}
