"""Image networks of the suite, written out (torchvision is not a dependency): ResNet-18 as
the CIFAR-10 variant Gavel ran, ResNet-50 as in torchvision, CycleGAN's ResNet-9 generator and
PatchGAN discriminator, and a ViT-B/16-shaped vision transformer. A `width` argument shrinks
every network for the suite's tiny mode without changing its structure."""
import torch
from torch import nn


class BasicBlock(nn.Module):
    expansion = 1

    def __init__(self, inputs: int, planes: int, stride: int = 1):
        super().__init__()
        self.body = nn.Sequential(
            nn.Conv2d(inputs, planes, 3, stride, 1, bias=False), nn.BatchNorm2d(planes), nn.ReLU(inplace=True),
            nn.Conv2d(planes, planes, 3, 1, 1, bias=False), nn.BatchNorm2d(planes),
        )
        self.shortcut = _shortcut(inputs, planes, stride)

    def forward(self, x):
        return torch.relu(self.body(x) + self.shortcut(x))


class Bottleneck(nn.Module):
    expansion = 4

    def __init__(self, inputs: int, planes: int, stride: int = 1):
        super().__init__()
        out = planes * 4
        self.body = nn.Sequential(
            nn.Conv2d(inputs, planes, 1, bias=False), nn.BatchNorm2d(planes), nn.ReLU(inplace=True),
            nn.Conv2d(planes, planes, 3, stride, 1, bias=False), nn.BatchNorm2d(planes), nn.ReLU(inplace=True),
            nn.Conv2d(planes, out, 1, bias=False), nn.BatchNorm2d(out),
        )
        self.shortcut = _shortcut(inputs, out, stride)

    def forward(self, x):
        return torch.relu(self.body(x) + self.shortcut(x))


def _shortcut(inputs: int, out: int, stride: int) -> nn.Module:
    if stride == 1 and inputs == out:
        return nn.Identity()
    return nn.Sequential(nn.Conv2d(inputs, out, 1, stride, bias=False), nn.BatchNorm2d(out))


class ResNet(nn.Module):
    """`imagenet`: the 7x7 stride-2 stem and max-pool of ImageNet ResNets; otherwise the CIFAR
    stem (one 3x3 convolution), as kuangliu/pytorch-cifar's ResNet-18 that Gavel trains."""

    def __init__(self, block, layers, classes: int, width: int = 64, imagenet: bool = True):
        super().__init__()
        stem = [nn.Conv2d(3, width, 7, 2, 3, bias=False)] if imagenet else [nn.Conv2d(3, width, 3, 1, 1, bias=False)]
        stem += [nn.BatchNorm2d(width), nn.ReLU(inplace=True)]
        if imagenet:
            stem.append(nn.MaxPool2d(3, 2, 1))
        stages, inputs = [], width
        for index, count in enumerate(layers):
            planes = width * 2**index
            for position in range(count):
                stages.append(block(inputs, planes, 2 if position == 0 and index > 0 else 1))
                inputs = planes * block.expansion
        self.features = nn.Sequential(*stem, *stages, nn.AdaptiveAvgPool2d(1), nn.Flatten())
        self.head = nn.Linear(inputs, classes)

    def forward(self, x):
        return self.head(self.features(x))


def resnet18_cifar(width: int = 64) -> ResNet:
    return ResNet(BasicBlock, [2, 2, 2, 2], 10, width, imagenet=False)


def resnet50(width: int = 64, layers=(3, 4, 6, 3)) -> ResNet:
    return ResNet(Bottleneck, list(layers), 1000, width, imagenet=True)


class _Residual(nn.Module):
    def __init__(self, channels: int):
        super().__init__()
        self.body = nn.Sequential(
            nn.ReflectionPad2d(1), nn.Conv2d(channels, channels, 3), nn.InstanceNorm2d(channels), nn.ReLU(True),
            nn.ReflectionPad2d(1), nn.Conv2d(channels, channels, 3), nn.InstanceNorm2d(channels),
        )

    def forward(self, x):
        return x + self.body(x)


def cyclegan_generator(width: int = 64, blocks: int = 9) -> nn.Module:
    """Zhu et al. 2017's ResNet generator: c7s1-64, d128, d256, 9 residual blocks, u128, u64, c7s1-3."""
    layers = [nn.ReflectionPad2d(3), nn.Conv2d(3, width, 7), nn.InstanceNorm2d(width), nn.ReLU(True)]
    channels = width
    for _ in range(2):
        layers += [nn.Conv2d(channels, channels * 2, 3, 2, 1), nn.InstanceNorm2d(channels * 2), nn.ReLU(True)]
        channels *= 2
    layers += [_Residual(channels) for _ in range(blocks)]
    for _ in range(2):
        layers += [nn.ConvTranspose2d(channels, channels // 2, 3, 2, 1, output_padding=1),
                   nn.InstanceNorm2d(channels // 2), nn.ReLU(True)]
        channels //= 2
    layers += [nn.ReflectionPad2d(3), nn.Conv2d(channels, 3, 7), nn.Tanh()]
    return nn.Sequential(*layers)


def patchgan(width: int = 64) -> nn.Module:
    """The 70x70 PatchGAN discriminator: C64-C128-C256-C512, then a 1-channel map."""
    layers, channels = [nn.Conv2d(3, width, 4, 2, 1), nn.LeakyReLU(0.2, True)], width
    for stride in (2, 2, 1):
        layers += [nn.Conv2d(channels, channels * 2, 4, stride, 1), nn.InstanceNorm2d(channels * 2),
                   nn.LeakyReLU(0.2, True)]
        channels *= 2
    layers.append(nn.Conv2d(channels, 1, 4, 1, 1))
    return nn.Sequential(*layers)


class VisionTransformer(nn.Module):
    """ViT (Dosovitskiy et al. 2021): patch embedding, class token, learned positions, pre-norm
    encoder, linear head on the class token. Defaults are ViT-B/16 at 224x224."""

    def __init__(self, image: int = 224, patch: int = 16, dim: int = 768, depth: int = 12, heads: int = 12,
                 classes: int = 1000):
        super().__init__()
        self.patches = nn.Conv2d(3, dim, patch, patch)
        self.cls = nn.Parameter(torch.zeros(1, 1, dim))
        self.position = nn.Parameter(torch.zeros(1, (image // patch) ** 2 + 1, dim))
        layer = nn.TransformerEncoderLayer(dim, heads, 4 * dim, dropout=0.0, activation="gelu", batch_first=True,
                                           norm_first=True)
        self.encoder = nn.TransformerEncoder(layer, depth, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, classes)

    def forward(self, x):
        tokens = self.patches(x).flatten(2).transpose(1, 2)
        tokens = torch.cat([self.cls.expand(len(x), -1, -1), tokens], dim=1) + self.position
        return self.head(self.norm(self.encoder(tokens))[:, 0])
