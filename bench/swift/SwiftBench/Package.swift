// swift-tools-version:6.0
// The Swift line of `make bench`: the same measurements as bench/bench_sdk.c, through CursorSDK.
import PackageDescription

let package = Package(
    name: "SwiftBench",
    platforms: [.macOS(.v15)],
    dependencies: [.package(path: "../../../bindings/swift")],
    targets: [
        .executableTarget(name: "swift-bench", dependencies: [.product(name: "CursorSDK", package: "swift")]),
    ],
    swiftLanguageModes: [.v6]
)
