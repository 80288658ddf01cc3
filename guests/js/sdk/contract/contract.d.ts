/// <reference path="./interfaces/reconciler-guest-facts.d.ts" />
/// <reference path="./interfaces/reconciler-guest-reconciler.d.ts" />
/// <reference path="./interfaces/reconciler-guest-types.d.ts" />
declare module 'reconciler:guest/guest@0.6.0' {
  export type * as ReconcilerGuestFacts060 from 'reconciler:guest/facts@0.6.0'; // import reconciler:guest/facts@0.6.0
  export type * as ReconcilerGuestTypes060 from 'reconciler:guest/types@0.6.0'; // import reconciler:guest/types@0.6.0
  export * as reconciler from 'reconciler:guest/reconciler@0.6.0'; // export reconciler:guest/reconciler@0.6.0
}
