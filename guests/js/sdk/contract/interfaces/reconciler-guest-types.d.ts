declare module 'reconciler:guest/types@0.6.0' {
  /**
   * A point in time: seconds and nanoseconds since the Unix epoch, UTC.
   */
  export interface Timestamp {
    seconds: bigint,
    nanos: number,
  }
  /**
   * A Kubernetes kind, as the host addresses it.
   */
  export interface KindRef {
    /**
     * API group; empty for the core group ("" for Pods, Secrets).
     */
    group: string,
    version: string,
    kind: string,
  }
  /**
   * The object that controls another one (its `controller: true` owner).
   */
  export interface ControllerRef {
    apiVersion: string,
    kind: string,
    name: string,
    uid: string,
  }
  /**
   * What every object fact carries from `metadata`.
   */
  export interface ObjectMeta {
    name: string,
    /**
     * Empty for cluster-scoped objects.
     */
    namespace: string,
    uid: string,
    generation: bigint,
    labels: Array<[string, string]>,
    annotations: Array<[string, string]>,
    controller?: ControllerRef,
    creation?: Timestamp,
    /**
     * Set while the object is being deleted.
     */
    deletion?: Timestamp,
  }
  /**
   * An object of any kind: its metadata, typed, and the whole object as
   * JSON (for `spec` and `status` of custom kinds). For Secrets the host
   * never serves the object: see `facts.secret`.
   */
  export interface Object {
    meta: ObjectMeta,
    json: string,
  }
  /**
   * # Variants
   * 
   * ## `"true"`
   * 
   * ## `"false"`
   * 
   * ## `"unknown"`
   */
  export type ConditionStatus = 'true' | 'false' | 'unknown';
}
