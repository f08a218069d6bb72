// swift-tools-version:6.0
// A streaming example of the Swift binding: `swift run stream "your prompt"`.
import PackageDescription

let package = Package(
    name: "stream",
    platforms: [.macOS(.v15)],
    dependencies: [.package(path: "../../../bindings/swift")],
    targets: [
        .executableTarget(name: "stream", dependencies: [.product(name: "CursorSDK", package: "swift")]),
    ],
    swiftLanguageModes: [.v6]
)
