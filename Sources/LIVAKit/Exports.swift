// `import LIVAKit` is all an app needs: the client, its configuration and events, content modes
// and the lifecycle policy's settings come with it.
@_exported import LIVA
@_exported import LIVAMedia
@_exported import LIVAPlatform
